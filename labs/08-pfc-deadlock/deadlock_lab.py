"""Lab 8 — PFC deadlock: find the cyclic buffer dependency before the fabric does.

A lossless queue is a *channel*: the egress queue of switch A towards switch B, written
("A", "B"). A flow whose path crosses A -> B -> C makes channel (A, B) depend on (B, C): when
(B, C) is paused and full, B pauses (A, B). Routes whose channel dependency graph has a cycle can
deadlock under PFC; an acyclic graph cannot (Dally and Seitz).

Check:  fabric-lab lab check 8 --program deadlock_lab.py
"""

from __future__ import annotations

Channel = tuple[str, str]


def dependencies(paths: list[list[str]]) -> dict[Channel, set[Channel]]:
    """The channel dependency graph of flows whose paths are given as the switches they cross
    in order (hosts left out). Every channel a path uses is a key (with an empty set if it
    feeds no other channel); its value is the set of channels it depends on."""
    deps: dict[Channel, set[Channel]] = {}
    # TODO 1: for every path, each consecutive pair of switches is a channel; each channel
    # depends on the next channel of the same path.
    return deps


def find_cycle(deps: dict[Channel, set[Channel]]) -> list[Channel] | None:
    """One cycle of the graph as its channels in order (each depends on the next, the last on
    the first), or None if the graph is acyclic."""
    # TODO 2: a depth-first search that remembers the channels on the current path.
    return None


def deadlock_free(paths: list[list[str]]) -> bool:
    """True if these flows can never deadlock under PFC."""
    # TODO 3
    return True
