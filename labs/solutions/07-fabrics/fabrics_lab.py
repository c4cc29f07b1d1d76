"""Lab 7 — The three fabrics: equal-cost path counts. Solution."""

from __future__ import annotations

from collections import deque

from topos.model import FabricSpec


def path_count(spec: FabricSpec, src: str, dst: str) -> tuple[int, int]:
    """(switches on a shortest path, number of shortest paths) from NIC `src` to NIC `dst`."""
    keep = {sw.name for sw in spec.switches} | {src, dst}
    neighbours: dict[str, list[str]] = {name: [] for name in keep}
    for link in spec.links:
        if link.a.node in keep and link.b.node in keep:
            neighbours[link.a.node].append(link.b.node)
            neighbours[link.b.node].append(link.a.node)
    hops, paths = {src: 0}, {src: 1}
    todo = deque([src])
    while todo:
        node = todo.popleft()
        if node == dst:
            continue  # the destination NIC forwards nothing either
        for far in neighbours[node]:
            if far not in hops:
                hops[far], paths[far] = hops[node] + 1, 0
                todo.append(far)
            if hops[far] == hops[node] + 1:
                paths[far] += paths[node]
    if dst not in hops:
        raise ValueError(f"{dst} is unreachable from {src}")
    return hops[dst] - 1, paths[dst]
