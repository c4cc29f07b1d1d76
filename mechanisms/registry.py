"""Every mechanism of `p4src/include/` and every program of `p4src/`, and lookups over them."""

from __future__ import annotations

from mechanisms import (
    dlb,
    ecn,
    flow,
    flowlet,
    pfc,
    port_io,
    qdlb,
    routing,
    tagging,
    telemetry,
    trimming,
)
from mechanisms import int as inband
from mechanisms.model import Mechanism, MechanismError, Program, Telemetry, by_name
from mechanisms.paths import program_path

MECHANISMS: tuple[Mechanism, ...] = (
    flow.MECHANISM, port_io.MECHANISM, routing.MECHANISM, ecn.MECHANISM, pfc.MECHANISM,
    telemetry.MECHANISM, inband.MECHANISM, flowlet.MECHANISM, tagging.MECHANISM, dlb.MECHANISM,
    qdlb.MECHANISM, trimming.MECHANISM,
)

_BASE = (flow.MECHANISM, port_io.MECHANISM, ecn.MECHANISM, pfc.MECHANISM, telemetry.MECHANISM,
         inband.MECHANISM, trimming.MECHANISM, routing.MECHANISM)  # what `include/fabric_main.p4` always includes


def _program(name: str, summary: str, *extra: Mechanism) -> Program:
    return Program(name, program_path(name), summary, (*_BASE, *extra))


PROGRAMS: dict[str, Program] = {p.name: p for p in (
    _program("ecmp", "ECMP baseline: 5-tuple hash over equal-cost next hops"),
    _program("flowlet", "flowlet switching on top of ECMP", flowlet.MECHANISM),
    _program("dlb", "per-packet round-robin DLB with reorder tags",
             tagging.MECHANISM, dlb.MECHANISM),
    _program("qdlb", "queue-aware per-packet DLB with reorder tags",
             tagging.MECHANISM, qdlb.MECHANISM),
)}
LB_MODES: tuple[str, ...] = tuple(PROGRAMS)  # the load-balancing modes: one program each


def mechanism(name: str) -> Mechanism:
    """The mechanism called `name` ("ecn", "pfc", ...)."""
    return by_name("mechanism", MECHANISMS, name)


def program(name: str) -> Program:
    """The top-level program called `name` ("ecmp", "flowlet", "dlb", "qdlb")."""
    if name not in PROGRAMS:
        raise MechanismError(f"no program named {name!r} (there are: {', '.join(PROGRAMS)})")
    return PROGRAMS[name]


def telemetry_items(mechanisms: tuple[Mechanism, ...] = MECHANISMS) -> dict[str, Telemetry]:
    """Every telemetry item of `mechanisms`, by key (`tx_packets`, `ecn_marked`, ...)."""
    out: dict[str, Telemetry] = {}
    for m in mechanisms:
        for item in m.telemetry:
            if item.key in out:
                raise MechanismError(f"telemetry key {item.key!r} of {m.name} is taken")
            out[item.key] = item
    return out


def p4_name(local: str, mechanisms: tuple[Mechanism, ...] = MECHANISMS) -> str:
    """The full control-plane name ending in `.local` (`tx_port_counter` ->
    `FabricEgress.port_io.tx_port_counter`); a MechanismError if none or several do."""
    names = {n for m in mechanisms for n in m.names()}
    found = sorted(n for n in names if n == local or n.endswith(f".{local}"))
    if len(found) != 1:
        what = "no" if not found else f"{len(found)} ({', '.join(found)})"
        raise MechanismError(f"{what} control-plane names end in {local!r}")
    return found[0]
