"""Shared machinery of the builders: add switches, servers and links; ports numbered in order."""

from __future__ import annotations

from typing import Any

from topos.addressing import assign_addresses, intf_name
from topos.model import Endpoint, FabricSpec, Host, Link, Nic, Switch
from topos.validation import FabricError, validate

# Link defaults sized for this machine: 10 Mb/s and 1 ms one way, so a 4-link path has an 8 ms RTT
# (about 10 packets of 1 KB in flight), and 64-packet queues.
DEFAULT_RATE_MBPS = 10.0
DEFAULT_DELAY_MS = 1.0
DEFAULT_QUEUE_PKTS = 64


def check_scale(minimum: int = 1, **values: int) -> None:
    """Raise one FabricError naming every scale parameter that is not an integer >= `minimum`."""
    bad = [f"{name}={value!r}" for name, value in values.items()
           if not isinstance(value, int) or isinstance(value, bool) or value < minimum]
    if bad:
        raise FabricError("scale", [f"scale parameters must be integers >= {minimum}: "
                                    + ", ".join(bad)], "scale")


class FabricBuilder:
    """Accumulates a fabric; `build()` assigns addresses and validates it."""

    def __init__(self, name: str, kind: str, params: dict[str, Any], description: str = "", *,
                 rate_mbps: float | None = DEFAULT_RATE_MBPS,
                 delay_ms: float | None = DEFAULT_DELAY_MS,
                 queue_pkts: int | None = DEFAULT_QUEUE_PKTS):
        self.spec = FabricSpec(name=name, kind=kind, params=dict(params), description=description)
        self.link_defaults = {"rate_mbps": rate_mbps, "delay_ms": delay_ms,
                              "queue_pkts": queue_pkts}
        self._next_port: dict[str, int] = {}
        self._is_switch: dict[str, bool] = {}

    def switch(self, name: str, role: str, tier: int, *, plane: str | None = None,
               rail: int | None = None, group: int | None = None) -> str:
        self.spec.switches.append(Switch(name=name, role=role, tier=tier, plane=plane, rail=rail,
                                         group=group))
        self._next_port[name] = 1
        self._is_switch[name] = True
        return name

    def server(self, name: str, nics: list[tuple[str, int | None]],
               group: int | None = None) -> list[str]:
        """Add a server with NICs given as (name, rail); returns the NIC names."""
        self.spec.hosts.append(Host(name=name, group=group,
                                    nics=[Nic(name=n, rail=rail) for n, rail in nics]))
        for nic_name, _ in nics:
            self._next_port[nic_name] = 0
            self._is_switch[nic_name] = False
        return [n for n, _ in nics]

    def _endpoint(self, node: str) -> Endpoint:
        if node not in self._next_port:
            raise KeyError(f"link to unknown node {node!r}")
        port = self._next_port[node]
        self._next_port[node] = port + 1
        return Endpoint(node=node, port=port, intf=intf_name(node, port))

    def link(self, a: str, b: str, **overrides: Any) -> Link:
        """Connect `a` and `b` on their next free ports; overrides rate_mbps/delay_ms/queue_pkts."""
        unknown = set(overrides) - set(self.link_defaults)
        if unknown:
            raise TypeError(f"unknown link properties: {sorted(unknown)}")
        props = {**self.link_defaults, **overrides}
        link = Link(a=self._endpoint(a), b=self._endpoint(b), **props)
        self.spec.links.append(link)
        return link

    def build(self) -> FabricSpec:
        return validate(assign_addresses(self.spec))
