"""BiGraph (Alibaba EFLOPS): two groups of switches, complete bipartite between them.

Hosts attach to both groups and every switch is both leaf and spine. Between hosts: same switch =
1 switch hop; different groups = 2 switches over exactly one shortest path; same group, different
switches = 3 switches over N/2 equal-cost paths. Non-blocking when hosts_per_switch (M) = N/2.

Default: N = 8 switches (up0..up3, lo0..lo3), 16 switch-to-switch links, M = 2, 16 hosts with one
NIC each. Host n sits on switch n // M, switches numbered up0..up3 then lo0..lo3.
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

# Rank -> host order of the rank-remapped halving-doubling allreduce for M = 2, N = 8.
HDRM_RANKS_M2_N8 = [0, 8, 10, 2, 12, 4, 6, 14, 9, 3, 5, 11, 7, 13, 15, 1]


def bigraph(*, switches_per_group: int = 4, hosts_per_switch: int = 2,
            rate_mbps: float | None = DEFAULT_RATE_MBPS,
            delay_ms: float | None = DEFAULT_DELAY_MS,
            queue_pkts: int | None = DEFAULT_QUEUE_PKTS) -> FabricSpec:
    """Build a BiGraph fabric of 2 x switches_per_group switches."""
    check_scale(switches_per_group=switches_per_group, hosts_per_switch=hosts_per_switch)
    params = dict(switches_per_group=switches_per_group, hosts_per_switch=hosts_per_switch,
                  rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    fab = FabricBuilder("bigraph", "bigraph", params,
                        "BiGraph: complete bipartite upper/lower groups, hosts on both",
                        rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    upper = [fab.switch(f"up{i}", "upper", 1, group=0) for i in range(switches_per_group)]
    lower = [fab.switch(f"lo{i}", "lower", 1, group=1) for i in range(switches_per_group)]
    for n, sw in enumerate(s for s in upper + lower for _ in range(hosts_per_switch)):
        group = 0 if n < switches_per_group * hosts_per_switch else 1
        (nic,) = fab.server(f"srv{n}", [(f"h{n}n0", None)], group=group)
        fab.link(nic, sw)
    for u in upper:
        for lo in lower:
            fab.link(u, lo)
    return fab.build()
