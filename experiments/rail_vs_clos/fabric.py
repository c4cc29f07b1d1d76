"""The contrast fabric of `rail-vs-clos`: a general-purpose Clos, a server's NICs on one ToR.

The same servers as `hpn7` (`segments` x `servers_per_segment` servers of `nics_per_server`
NICs, named alike, grouped by segment), but one ToR per server: all of a server's NICs share
it, whichever rail they are on, and every ToR connects to every aggregation switch. So traffic
between the same rail of two servers always climbs to the aggregation layer and takes an ECMP
decision there, where on HPN 7.0 it stays on its rail ToR inside a segment. A ToR has
`nics_per_server` links down and `aggs` up (1:1 when they are equal, the default).
"""

from __future__ import annotations

from topos.builders.base import DEFAULT_DELAY_MS, DEFAULT_QUEUE_PKTS, FabricBuilder, check_scale
from topos.model import FabricSpec


def shared_tor_clos(*, segments: int = 2, servers_per_segment: int = 2, nics_per_server: int = 2,
                    aggs: int | None = None, rate_mbps: float | None = 10.0,
                    delay_ms: float | None = DEFAULT_DELAY_MS,
                    queue_pkts: int | None = DEFAULT_QUEUE_PKTS) -> FabricSpec:
    aggs = nics_per_server if aggs is None else aggs
    check_scale(segments=segments, servers_per_segment=servers_per_segment,
                nics_per_server=nics_per_server, aggs=aggs)
    params = dict(segments=segments, servers_per_segment=servers_per_segment,
                  nics_per_server=nics_per_server, aggs=aggs, rate_mbps=rate_mbps,
                  delay_ms=delay_ms, queue_pkts=queue_pkts)
    fab = FabricBuilder("clos", "clos", params,
                        "General Clos: one ToR per server, its NICs all on it",
                        rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    agg_names = [fab.switch(f"agg{j}", "agg", 2) for j in range(aggs)]
    for seg in range(segments):
        for i in range(servers_per_segment):
            k = seg * servers_per_segment + i
            tor = fab.switch(f"tor{k}", "tor", 1, group=seg)
            for nic in fab.server(f"srv{k}", [(f"h{k}n{r}", r) for r in range(nics_per_server)],
                                  group=seg):
                fab.link(nic, tor)
    for k in range(segments * servers_per_segment):
        for agg in agg_names:
            fab.link(f"tor{k}", agg)
    return fab.build()
