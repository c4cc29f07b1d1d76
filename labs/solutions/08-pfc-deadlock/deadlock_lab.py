"""Lab 8 — PFC deadlock: find the cyclic buffer dependency before the fabric does (solution).

A lossless queue is a *channel*: the egress queue of switch A towards switch B, written
("A", "B"). A flow whose path crosses A -> B -> C makes channel (A, B) depend on (B, C): when
(B, C) is paused and full, B pauses (A, B). Routes whose channel dependency graph has a cycle can
deadlock under PFC; an acyclic graph cannot (Dally and Seitz).

Check:  fabric-lab lab check 8 --program deadlock_lab.py
"""

from __future__ import annotations

from itertools import pairwise

Channel = tuple[str, str]


def dependencies(paths: list[list[str]]) -> dict[Channel, set[Channel]]:
    """The channel dependency graph of flows whose paths are given as the switches they cross
    in order (hosts left out). Every channel a path uses is a key (with an empty set if it
    feeds no other channel); its value is the set of channels it depends on."""
    deps: dict[Channel, set[Channel]] = {}
    for path in paths:
        channels = list(pairwise(path))
        for i, here in enumerate(channels):
            deps.setdefault(here, set())
            if i + 1 < len(channels):
                deps[here].add(channels[i + 1])
    return deps


def find_cycle(deps: dict[Channel, set[Channel]]) -> list[Channel] | None:
    """One cycle of the graph as its channels in order (each depends on the next, the last on
    the first), or None if the graph is acyclic."""
    done: set[Channel] = set()
    for start in sorted(deps):
        if start in done:
            continue
        path, on_path = [start], {start}
        todo = [iter(sorted(deps.get(start, ())))]
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                done.add(path[-1])
                on_path.discard(path.pop())
                todo.pop()
            elif nxt in on_path:
                return path[path.index(nxt):]
            elif nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                todo.append(iter(sorted(deps.get(nxt, ()))))
    return None


def deadlock_free(paths: list[list[str]]) -> bool:
    """True if these flows can never deadlock under PFC."""
    return find_cycle(dependencies(paths)) is None
