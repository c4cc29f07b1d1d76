"""HPN 7.0 (Alibaba): dual-ToR, dual-plane, rail-optimised segments, two tiers.

Every NIC has two ports: port 0 to a ToR of plane A, port 1 to a ToR of plane B. Inside a segment,
NIC r of every server attaches to the rail-r ToR of each plane, so same-rail traffic in a segment
crosses one switch. Every ToR connects to every aggregation switch of its own plane only, so from
an aggregation switch down to a NIC port there is exactly one path and the only ECMP decision is
the ToR uplink. `dual_tor=False` gives the single-ToR contrast (one plane, one port per NIC).
An optional third tier (`cores`) joins the aggregation switches of both planes.

Default (SimAI's HPN generator with 8 GPUs, 2 per server, 2 segments): 12 switches, 8 dual-homed
NICs; ToR 2 down : 2 up (1:1). The ToR ratio follows from `servers_per_segment` down against
`aggs_per_plane` up (times `uplink_rate_mbps` / `rate_mbps`).
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


def tor_name(plane: str, segment: int, rail: int) -> str:
    return f"t{plane.lower()}-s{segment}r{rail}"


def hpn7(*, segments: int = 2, servers_per_segment: int = 2, nics_per_server: int = 2,
         aggs_per_plane: int = 2, cores: int = 0, dual_tor: bool = True,
         rate_mbps: float | None = DEFAULT_RATE_MBPS,
         uplink_rate_mbps: float | None = None,
         delay_ms: float | None = DEFAULT_DELAY_MS,
         queue_pkts: int | None = DEFAULT_QUEUE_PKTS) -> FabricSpec:
    """Build an HPN 7.0 fabric; `nics_per_server` is also the number of rails."""
    check_scale(segments=segments, servers_per_segment=servers_per_segment,
                nics_per_server=nics_per_server, aggs_per_plane=aggs_per_plane)
    check_scale(minimum=0, cores=cores)
    params = dict(segments=segments, servers_per_segment=servers_per_segment,
                  nics_per_server=nics_per_server, aggs_per_plane=aggs_per_plane, cores=cores,
                  dual_tor=dual_tor, rate_mbps=rate_mbps, uplink_rate_mbps=uplink_rate_mbps,
                  delay_ms=delay_ms, queue_pkts=queue_pkts)
    planes = ["A", "B"] if dual_tor else ["A"]
    fab = FabricBuilder(
        "hpn7", "hpn7", params,
        "HPN 7.0: dual-ToR, dual-plane, rail-optimised segments" if dual_tor
        else "HPN 7.0 layout with single-ToR NICs (contrast)",
        rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    up = {"rate_mbps": uplink_rate_mbps} if uplink_rate_mbps is not None else {}

    for plane in planes:
        for seg in range(segments):
            for rail in range(nics_per_server):
                fab.switch(tor_name(plane, seg, rail), "tor", 1, plane=plane, rail=rail, group=seg)
    aggs = {plane: [fab.switch(f"agg{plane.lower()}{j}", "agg", 2, plane=plane)
                    for j in range(aggs_per_plane)] for plane in planes}
    core_names = [fab.switch(f"core{c}", "core", 3) for c in range(cores)]

    for seg in range(segments):
        for i in range(servers_per_segment):
            k = seg * servers_per_segment + i
            nics = fab.server(f"srv{k}", [(f"h{k}n{r}", r) for r in range(nics_per_server)],
                              group=seg)
            for plane in planes:  # plane A first: NIC port 0 is always plane A
                for rail, nic in enumerate(nics):
                    fab.link(nic, tor_name(plane, seg, rail))
    for plane in planes:
        for seg in range(segments):
            for rail in range(nics_per_server):
                for agg in aggs[plane]:
                    fab.link(tor_name(plane, seg, rail), agg, **up)
    for plane in planes:
        for agg in aggs[plane]:
            for core in core_names:
                fab.link(agg, core, **up)
    return fab.build()


def hpn7_size(*, segments: int, servers_per_segment: int, nics_per_server: int,
              aggs_per_plane: int, cores: int, dual_tor: bool, **_: object) -> FabricSize:
    planes = 2 if dual_tor else 1
    tors = planes * segments * nics_per_server
    servers = segments * servers_per_segment
    return FabricSize(
        switches=tors + planes * aggs_per_plane + cores, servers=servers,
        nics_per_server=nics_per_server,
        links=(servers * nics_per_server * planes + tors * aggs_per_plane
               + planes * aggs_per_plane * cores),
        switch_ports=max(servers_per_segment + aggs_per_plane,
                         segments * nics_per_server + cores, planes * aggs_per_plane))
