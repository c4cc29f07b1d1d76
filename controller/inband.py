"""In-band telemetry knobs (`p4src/include/int.p4`): each switch's id and its links' rates, the
values its INT records carry, written over P4Runtime when the controller programs a fabric.

    apply_int(ctl)                      # every connected switch: id = device id, rates from links
    int_settings(spec, "leaf0")         # (switch id, {port: Mb/s}) the controller would write

Switch ids are the fabric's device ids (unique, 1..65535). A link's rate is its `rate_mbps`
rounded (at least 1); a link without one (not shaped) gets `DEFAULT_LINK_MBPS`, the lab's
default rate. A program without `int.p4` is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from p4.v1 import p4runtime_pb2

from controller.knobs import knob_state, sync_knob
from controller.schema import Schema, SchemaError
from mechanisms import int as inband
from topos.errors import FabricLabError
from topos.model import FabricSpec

DEFAULT_LINK_MBPS = 10  # topos.builders.base.DEFAULT_RATE_MBPS, the lab's default link rate
SWITCH_KNOB = inband.MECHANISM.knob("int_switch_id")
LINK_KNOB = inband.MECHANISM.knob("int_link_rate")


class IntConfigError(FabricLabError, ValueError):
    """A switch id or link rate the INT record cannot carry."""


class _Client(Protocol):
    def read(self, entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]: ...
    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None: ...


class _Fabric(Protocol):  # controller.fabric.FabricController
    spec: FabricSpec
    schema: Schema

    @property
    def clients(self) -> Mapping[str, _Client]: ...


def has_int(schema: Schema) -> bool:
    """Whether the program carries `int.p4`."""
    try:
        schema.table(inband.SWITCH_TABLE)
    except SchemaError:
        return False
    return True


def int_settings(spec: FabricSpec, switch: str) -> tuple[int, dict[int, int]]:
    """The switch id and the rate (Mb/s) of each of its ports that `switch`'s records carry."""
    switch_id = spec.switch(switch).device_id
    rates: dict[int, int] = {}
    for link in spec.links_of(switch):
        mbps = DEFAULT_LINK_MBPS if link.rate_mbps is None else max(1, round(link.rate_mbps))
        rates[link.end(switch).port] = mbps
    problems = []
    if not 0 < switch_id <= inband.SWITCH_ID_MAX:
        problems.append(f"switch {switch}: id {switch_id} is not 1..{inband.SWITCH_ID_MAX}")
    problems += [f"switch {switch} port {port}: {mbps} Mb/s does not fit 32 bits"
                 for port, mbps in rates.items() if mbps > inband.LINK_MBPS_MAX]
    if problems:
        raise IntConfigError("; ".join(problems))
    return switch_id, rates


def configure_int(client: _Client, schema: Schema, switch_id: int,
                  rates: Mapping[int, int]) -> int:
    """Write one switch's id and link rates (only what differs); returns the updates written."""
    ids = knob_state(schema, SWITCH_KNOB, default={inband.SWITCH_PARAM: switch_id})
    links = knob_state(schema, LINK_KNOB, [((port,), {inband.LINK_PARAM: mbps})
                                           for port, mbps in sorted(rates.items())])
    return (sync_knob(client, schema, SWITCH_KNOB, ids)
            + sync_knob(client, schema, LINK_KNOB, links))


def apply_int(ctl: _Fabric) -> dict[str, int]:
    """Every connected switch's id and link rates, from the fabric; updates written per switch
    (nothing for a program without INT)."""
    if not has_int(ctl.schema):
        return {}
    settings = {name: int_settings(ctl.spec, name) for name in ctl.clients}
    return {name: configure_int(client, ctl.schema, *settings[name])
            for name, client in ctl.clients.items()}
