"""What the fabric model says about a collective step before it runs: the switch-to-switch links
each flow must cross, how many flows share a link, and which flows cross a given tier.

A flow with one shortest path has all its links known. A flow with several equal-cost paths
(ECMP decides per flow on the switches) is known only on the links every path shares; the
others are left to the measurement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cache
from itertools import pairwise

from topos import FabricSpec
from topos.analysis import shortest_paths

DirectedLink = tuple[str, str]


class PathModel:
    """Shortest paths between the NICs of one fabric, cached."""

    def __init__(self, spec: FabricSpec) -> None:
        self.spec = spec
        self._paths = cache(lambda src, dst: shortest_paths(spec, src, dst))

    def paths(self, src: str, dst: str) -> list[list[str]]:
        return self._paths(src, dst)

    def certain_links(self, src: str, dst: str) -> set[DirectedLink]:
        """Switch-to-switch links (from, to) that every shortest path from `src` to `dst` uses."""
        sets = [set(pairwise(path)) for path in self.paths(src, dst)]
        return set.intersection(*sets) if sets else set()

    def multipath(self, src: str, dst: str) -> bool:
        return len(self.paths(src, dst)) > 1

    def crosses(self, src: str, dst: str, switches: set[str]) -> bool:
        """True when every shortest path passes one of `switches`."""
        return all(switches & set(path) for path in self.paths(src, dst))

    def link_flows(self, pairs: Iterable[tuple[str, str]]) -> Counter:
        """Flows per switch-to-switch link, counting each flow's certain links only."""
        loads: Counter = Counter()
        for src, dst in pairs:
            loads.update(self.certain_links(src, dst))
        return loads


def conflicts(link_flows: Counter) -> tuple[int, int]:
    """(links carrying more than one flow, most flows on one link)."""
    return (sum(n > 1 for n in link_flows.values()), max(link_flows.values(), default=0))


def measured_link_flows(packets: Counter, packets_per_flow: int,
                        links: Iterable[DirectedLink]) -> Counter:
    """Flows per link from packet counter deltas: packets / a flow's packets, rounded down.
    Besides data a link carries the receivers' ACKs of the flows in the other direction (one
    per message and per `ack_every` packets, `jobs.ccl.communicator.Transport`): fewer than
    one flow's packets when a flow has 3 or more."""
    if packets_per_flow < 3:
        raise ValueError(f"flows of {packets_per_flow} packets cannot be told from ACKs")
    out: Counter = Counter()
    for link in links:
        n = packets.get(link, 0) // packets_per_flow
        if n:
            out[link] = n
    return out
