"""AIPod (Baidu): rails, aggregation groups, per-rail spines, a superspine; three tiers, 1:1.

NIC r of every server in aggregation group g attaches to leaf (g, r): same-rank traffic inside a
group crosses one switch. Each rail has its own spines, connected to that rail's leaf in every
group; superspines join the rails' spines for cross-rail traffic.

Default: 4 rails, 2 groups of 2 servers x 4 NICs = 16 NICs; 8 leaves, 8 spines (2 per rail),
2 superspines = 18 switches; every leaf has 2-way ECMP up; every tier 1:1.
"""

from __future__ import annotations

from topos.builders.base import (
    DEFAULT_DELAY_MS,
    DEFAULT_QUEUE_PKTS,
    DEFAULT_RATE_MBPS,
    FabricBuilder,
    check_scale,
)
from topos.model import FabricSpec
from topos.size import FabricSize


def leaf_name(group: int, rail: int) -> str:
    return f"lf-g{group}r{rail}"


def spine_name(rail: int, index: int) -> str:
    return f"sp-r{rail}n{index}"


def aipod(*, rails: int = 4, groups: int = 2, servers_per_group: int = 2,
          spines_per_rail: int = 2, superspines: int = 2,
          rate_mbps: float | None = DEFAULT_RATE_MBPS,
          delay_ms: float | None = DEFAULT_DELAY_MS,
          queue_pkts: int | None = DEFAULT_QUEUE_PKTS) -> FabricSpec:
    """Build an AIPod fabric (non-blocking when spines_per_rail == servers_per_group and
    superspines == groups)."""
    check_scale(rails=rails, groups=groups, servers_per_group=servers_per_group,
                spines_per_rail=spines_per_rail, superspines=superspines)
    params = dict(rails=rails, groups=groups, servers_per_group=servers_per_group,
                  spines_per_rail=spines_per_rail, superspines=superspines,
                  rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    fab = FabricBuilder("aipod", "aipod", params,
                        "AIPod: rail-optimised groups, per-rail spines, superspine",
                        rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    for g in range(groups):
        for r in range(rails):
            fab.switch(leaf_name(g, r), "leaf", 1, rail=r, group=g)
    for r in range(rails):
        for j in range(spines_per_rail):
            fab.switch(spine_name(r, j), "spine", 2, rail=r)
    tops = [fab.switch(f"ssp{x}", "superspine", 3) for x in range(superspines)]

    for g in range(groups):
        for i in range(servers_per_group):
            k = g * servers_per_group + i
            nics = fab.server(f"srv{k}", [(f"h{k}n{r}", r) for r in range(rails)], group=g)
            for r, nic in enumerate(nics):
                fab.link(nic, leaf_name(g, r))
    for g in range(groups):
        for r in range(rails):
            for j in range(spines_per_rail):
                fab.link(leaf_name(g, r), spine_name(r, j))
    for r in range(rails):
        for j in range(spines_per_rail):
            for top in tops:
                fab.link(spine_name(r, j), top)
    return fab.build()


def aipod_size(*, rails: int, groups: int, servers_per_group: int, spines_per_rail: int,
               superspines: int, **_: object) -> FabricSize:
    leaves, spines = groups * rails, rails * spines_per_rail
    servers = groups * servers_per_group
    return FabricSize(
        switches=leaves + spines + superspines, servers=servers, nics_per_server=rails,
        links=servers * rails + leaves * spines_per_rail + spines * superspines,
        switch_ports=max(servers_per_group + spines_per_rail, groups + superspines, spines))
