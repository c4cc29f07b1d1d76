"""Rank order: which GPU runs rank r (`traffic.collectives.placement` does the work).

- `naive`: server by server, GPUs in local order (the order a launcher lists them).
- `topology`: AIPod's topology awareness: ranks grouped by the servers' segment / aggregation
  group, so ring neighbours cross the upper tiers as rarely as possible.
- `remap`: EFLOPS' rank remapping for halving-doubling on BiGraph (`hdrm_map`): at most one
  flow on every switch-to-switch link per step. BiGraph with one NIC per server only.
"""

from __future__ import annotations

from jobs.gpus import Cluster, Gpu
from topos.model import FabricSpec
from traffic.collectives.placement import hdrm_map, topology_aware_ring

ORDERS = ("naive", "topology", "remap")


def rank_order(cluster: Cluster, order: str, spec: FabricSpec | None = None) -> list[Gpu]:
    gpus = cluster.gpus()
    if order == "naive":
        return gpus
    if order == "topology":
        groups: dict[object, list[str]] = {}
        for s in cluster.servers:
            key = s.group if s.group is not None else s.name
            groups.setdefault(key, []).extend(g.nic for g in s.gpus)
        by_nic = {g.nic: g for g in gpus}
        ordered = topology_aware_ring([g.nic for g in gpus], list(groups.values()))
        return [by_nic[n] for n in ordered]
    if order == "remap":
        if spec is None or spec.kind != "bigraph":
            raise ValueError("rank order 'remap' (EFLOPS HDRM) needs a BiGraph fabric")
        if cluster.gpus_per_server != 1:
            raise ValueError("rank order 'remap' needs BiGraph with one NIC per server")
        switches = len(spec.switches)
        per_switch = int(spec.params.get("hosts_per_switch", len(gpus) // switches))
        return [gpus[i] for i in hdrm_map(per_switch, switches)]
    raise ValueError(f"unknown rank order {order!r} (one of {', '.join(ORDERS)})")
