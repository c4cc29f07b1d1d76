"""BiGraph (Alibaba EFLOPS): two groups of switches, complete bipartite between them.

Hosts attach to both groups and every switch is both leaf and spine. Between hosts: same switch =
1 switch hop; different groups = 2 switches over exactly one shortest path; same group, different
switches = 3 switches over N/2 equal-cost paths. Non-blocking when hosts_per_switch (M) = N/2.

Default: N = 8 switches (up0..up3, lo0..lo3), 16 switch-to-switch links, M = 2, 16 hosts with one
NIC each. Host n sits on switch n // M, switches numbered up0..up3 then lo0..lo3.

`nics_per_server` = K > 1 models EFLOPS servers with several accelerator/NIC pairs: the M
NIC slots of every switch stay as they are (same NIC count, same bisection), and each server takes
K of them, half in the upper and half in the lower group (NIC k in group k mod 2), so every
server reaches both groups in one switch hop. NIC k of server s is `h{s}n{k}` with rail k.
K must be 1 or even and divide the 2 N/2 M slots evenly.
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
from topos.validation import FabricError

# Rank -> host order of the rank-remapped halving-doubling allreduce for M = 2, N = 8.
HDRM_RANKS_M2_N8 = [0, 8, 10, 2, 12, 4, 6, 14, 9, 3, 5, 11, 7, 13, 15, 1]


def bigraph(*, switches_per_group: int = 4, hosts_per_switch: int = 2, nics_per_server: int = 1,
            rate_mbps: float | None = DEFAULT_RATE_MBPS,
            delay_ms: float | None = DEFAULT_DELAY_MS,
            queue_pkts: int | None = DEFAULT_QUEUE_PKTS) -> FabricSpec:
    """Build a BiGraph fabric of 2 x switches_per_group switches."""
    check_scale(switches_per_group=switches_per_group, hosts_per_switch=hosts_per_switch,
                nics_per_server=nics_per_server)
    per_group = switches_per_group * hosts_per_switch
    if nics_per_server > 1 and (nics_per_server % 2 or per_group % (nics_per_server // 2)):
        raise FabricError("bigraph", [f"nics_per_server must be 1, or even and dividing the "
                                      f"{per_group} NIC slots of each group into halves, not "
                                      f"{nics_per_server}"])
    params = dict(switches_per_group=switches_per_group, hosts_per_switch=hosts_per_switch,
                  nics_per_server=nics_per_server, rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    fab = FabricBuilder("bigraph", "bigraph", params,
                        "BiGraph: complete bipartite upper/lower groups, hosts on both",
                        rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    upper = [fab.switch(f"up{i}", "upper", 1, group=0) for i in range(switches_per_group)]
    lower = [fab.switch(f"lo{i}", "lower", 1, group=1) for i in range(switches_per_group)]
    if nics_per_server == 1:
        for n, sw in enumerate(s for s in upper + lower for _ in range(hosts_per_switch)):
            group = 0 if n < per_group else 1
            (nic,) = fab.server(f"srv{n}", [(f"h{n}n0", None)], group=group)
            fab.link(nic, sw)
    else:
        slots = [[s for s in members for _ in range(hosts_per_switch)]
                 for members in (upper, lower)]
        half = nics_per_server // 2
        for n in range(per_group // half):
            ports = [slots[k % 2][n * half + k // 2] for k in range(nics_per_server)]
            nics = fab.server(f"srv{n}", [(f"h{n}n{k}", k) for k in range(nics_per_server)])
            for nic, sw in zip(nics, ports, strict=True):
                fab.link(nic, sw)
    for u in upper:
        for lo in lower:
            fab.link(u, lo)
    return fab.build()


def bigraph_size(*, switches_per_group: int, hosts_per_switch: int, nics_per_server: int,
                 **_: object) -> FabricSize:
    slots = switches_per_group * hosts_per_switch  # NIC slots of one group
    servers = 2 * slots if nics_per_server == 1 else slots // max(1, nics_per_server // 2)
    return FabricSize(switches=2 * switches_per_group, servers=servers,
                      nics_per_server=nics_per_server,
                      links=2 * slots + switches_per_group ** 2,
                      switch_ports=hosts_per_switch + switches_per_group)
