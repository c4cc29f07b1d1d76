"""Baselines: a plain two-tier leaf-spine and the k-ary fat-tree (three tiers)."""

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


def leafspine(*, leaves: int = 4, spines: int = 2, hosts_per_leaf: int = 2,
              rate_mbps: float | None = DEFAULT_RATE_MBPS,
              delay_ms: float | None = DEFAULT_DELAY_MS,
              queue_pkts: int | None = DEFAULT_QUEUE_PKTS) -> FabricSpec:
    """Every leaf connects to every spine once; hosts have one NIC on one leaf.

    Leaf oversubscription is hosts_per_leaf : spines (default 2:2, non-blocking).
    """
    check_scale(leaves=leaves, spines=spines, hosts_per_leaf=hosts_per_leaf)
    params = dict(leaves=leaves, spines=spines, hosts_per_leaf=hosts_per_leaf,
                  rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    fab = FabricBuilder("leafspine", "leafspine", params, "Two-tier leaf-spine Clos (baseline)",
                        rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    leaf_names = [fab.switch(f"leaf{i}", "leaf", 1) for i in range(leaves)]
    spine_names = [fab.switch(f"spine{j}", "spine", 2) for j in range(spines)]
    for i, leaf in enumerate(leaf_names):
        for h in range(hosts_per_leaf):
            k = i * hosts_per_leaf + h
            (nic,) = fab.server(f"srv{k}", [(f"h{k}n0", None)], group=i)
            fab.link(nic, leaf)
    for leaf in leaf_names:
        for spine in spine_names:
            fab.link(leaf, spine)
    return fab.build()


def leafspine_size(*, leaves: int, spines: int, hosts_per_leaf: int, **_: object) -> FabricSize:
    servers = leaves * hosts_per_leaf
    return FabricSize(switches=leaves + spines, servers=servers, nics_per_server=1,
                      links=servers + leaves * spines,
                      switch_ports=max(hosts_per_leaf + spines, leaves))


def fattree(*, k: int = 4,
            rate_mbps: float | None = DEFAULT_RATE_MBPS,
            delay_ms: float | None = DEFAULT_DELAY_MS,
            queue_pkts: int | None = DEFAULT_QUEUE_PKTS) -> FabricSpec:
    """The k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores,
    k/2 hosts per edge switch; non-blocking. k = 4: 20 switches, 16 hosts."""
    check_scale(k=k)
    if k % 2:
        raise FabricError("fattree", [f"k must be even, not {k}"])
    half = k // 2
    params = dict(k=k, rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    fab = FabricBuilder("fattree", "fattree", params, f"k={k} fat-tree (baseline)",
                        rate_mbps=rate_mbps, delay_ms=delay_ms, queue_pkts=queue_pkts)
    edges = [[fab.switch(f"edge-p{p}n{i}", "edge", 1, group=p) for i in range(half)]
             for p in range(k)]
    aggs = [[fab.switch(f"agg-p{p}n{i}", "agg", 2, group=p) for i in range(half)]
            for p in range(k)]
    cores = [fab.switch(f"core{c}", "core", 3) for c in range(half * half)]
    for p in range(k):
        for i, edge in enumerate(edges[p]):
            for h in range(half):
                n = (p * half + i) * half + h
                (nic,) = fab.server(f"srv{n}", [(f"h{n}n0", None)], group=p)
                fab.link(nic, edge)
    for p in range(k):
        for edge in edges[p]:
            for agg in aggs[p]:
                fab.link(edge, agg)
    for p in range(k):
        for j, agg in enumerate(aggs[p]):
            for core in cores[j * half:(j + 1) * half]:
                fab.link(agg, core)
    return fab.build()


def fattree_size(*, k: int, **_: object) -> FabricSize:
    half = k // 2
    servers = k * half * half
    return FabricSize(switches=k * k + half * half, servers=servers, nics_per_server=1,
                      links=3 * servers, switch_ports=k)
