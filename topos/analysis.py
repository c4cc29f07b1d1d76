"""Figures of a fabric: switches and oversubscription per tier, paths between NICs (networkx)."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from topos.model import FabricSpec


@dataclass
class TierSummary:
    """One tier. `down` = capacity towards NICs and lower tiers, `up` = towards higher tiers or,
    in a one-tier fabric like BiGraph, towards switches of the same tier (Mb/s; an unshaped link
    counts as 1)."""

    tier: int
    roles: list[str]
    switches: int
    down_links: int
    up_links: int
    down_mbps: float
    up_mbps: float

    @property
    def oversubscription(self) -> float | None:
        """down : up, or None for the top tier (nothing above)."""
        return self.down_mbps / self.up_mbps if self.up_mbps else None


def tier_summary(spec: FabricSpec) -> list[TierSummary]:
    tier_of = {sw.name: sw.tier for sw in spec.switches}
    out = []
    for tier, switches in spec.tiers().items():
        row = TierSummary(tier, sorted({sw.role for sw in switches}), len(switches), 0, 0, 0.0, 0.0)
        for sw in switches:
            for ln in spec.links_of(sw.name):
                rate = ln.rate_mbps if ln.rate_mbps is not None else 1.0
                peer = ln.other(sw.name).node
                if peer not in tier_of or tier_of[peer] < tier:
                    row.down_links += 1
                    row.down_mbps += rate
                else:
                    row.up_links += 1
                    row.up_mbps += rate
        out.append(row)
    return out


def routing_graph(spec: FabricSpec, *nics: str) -> nx.Graph:
    """Switches plus the given NICs: NICs are never transit nodes, so others are left out."""
    graph = nx.Graph()
    graph.add_nodes_from(sw.name for sw in spec.switches)
    keep = set(graph.nodes) | set(nics)
    for ln in spec.links:
        if ln.a.node in keep and ln.b.node in keep:
            graph.add_edge(ln.a.node, ln.b.node)
    return graph


def shortest_paths(spec: FabricSpec, src: str, dst: str) -> list[list[str]]:
    """Every shortest path from NIC `src` to NIC `dst`, as lists of switch names."""
    graph = routing_graph(spec, src, dst)
    return [path[1:-1] for path in nx.all_shortest_paths(graph, src, dst)]


@dataclass
class PathClass:
    """NICs that `src` reaches over the same number of switches and of equal-cost paths."""

    switches: int
    paths: int
    example: str
    count: int


def path_classes(spec: FabricSpec, src: str) -> list[PathClass]:
    """Group every other NIC by (switches crossed, number of shortest paths) as seen from `src`."""
    classes: dict[tuple[int, int], PathClass] = {}
    for nic in spec.host_nics():
        if nic.name == src:
            continue
        paths = shortest_paths(spec, src, nic.name)
        key = (len(paths[0]), len(paths))
        if key in classes:
            classes[key].count += 1
        else:
            classes[key] = PathClass(key[0], key[1], nic.name, 1)
    return sorted(classes.values(), key=lambda c: (c.switches, c.paths))
