"""The deadlock's fabric: a ring of switches, one host on each, and the routes that close a loop.

    spec = ring_fabric(4)                 # r0 - r1 - r2 - r3 - r0, host h<i>n0 on r<i>
    plan = clockwise_routes(spec, compute_routes(spec))

On a ring of four the host opposite a switch is two hops away either way, so shortest-path ECMP
offers both directions. `clockwise_routes` keeps only the clockwise next hop (a routing policy
that always takes the lower-numbered ring port, say): flow i -> i+2 then crosses r_i -> r_i+1 ->
r_i+2, and the four ring queues depend on each other in a circle.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from controller.routes import SwitchRoutes
from topos.builders.base import FabricBuilder
from topos.model import FabricSpec
from topos.relocate import prefixed


def ring_fabric(switches: int = 4, *, prefix: str = "", grpc_base: int = 0,
                thrift_base: int = 0) -> FabricSpec:
    """`switches` switches in a ring, one single-NIC host on each; no kernel shaping (the switch
    queues are the bottleneck). With a prefix the names and management ports move apart."""
    if switches < 3:
        raise ValueError(f"a ring needs at least 3 switches, got {switches}")
    fab = FabricBuilder("ring", "ring", {"switches": switches},
                        f"Ring of {switches} switches (PFC deadlock)",
                        rate_mbps=None, delay_ms=None, queue_pkts=None)
    names = [fab.switch(f"r{i}", "ring", 1) for i in range(switches)]
    for i, name in enumerate(names):
        (nic,) = fab.server(f"srv{i}", [(f"h{i}n0", None)], group=i)
        fab.link(nic, name)  # port 1: the host
    for i, name in enumerate(names):  # port 2: clockwise, port 3: counter-clockwise
        fab.link(name, names[(i + 1) % switches])
    spec = fab.build()
    return prefixed(spec, prefix, grpc_base, thrift_base) if prefix else spec


def clockwise(spec: FabricSpec, switch: str) -> str:
    """The next switch clockwise (r_i -> r_i+1)."""
    names = [sw.name for sw in spec.switches]
    return names[(names.index(switch) + 1) % len(names)]


def clockwise_routes(spec: FabricSpec, plan: Mapping[str, SwitchRoutes]
                     ) -> dict[str, SwitchRoutes]:
    """`plan` with every ECMP set that holds the clockwise neighbour narrowed to it."""
    out = {name: copy.deepcopy(routes) for name, routes in plan.items()}
    for name, routes in out.items():
        ahead = clockwise(spec, name)
        for prefix, hops in routes.routes.items():
            if len(hops) > 1 and any(h.neighbour == ahead for h in hops):
                routes.routes[prefix] = tuple(h for h in hops if h.neighbour == ahead)
        routes.groups = {}
        for hops in routes.routes.values():
            routes.groups.setdefault(hops, len(routes.groups) + 1)
    return out
