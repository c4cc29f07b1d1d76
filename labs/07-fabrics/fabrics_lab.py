"""Lab 7 — The three fabrics: how many equal-cost paths does each one give a flow?

HPN 7.0, AIPod and BiGraph (and the leaf-spine baseline) differ in how many switches a flow
crosses and over how many equal-cost paths ECMP can spread it. Write the count, then predict and
compare the three fabrics (the handout's table).

A fabric is a `topos.model.FabricSpec`: `spec.switches`, `spec.host_nics()`, `spec.links` (each
link has ends `a` and `b` with `.node`), `spec.is_switch(name)`. NICs never forward: a path runs
from the source NIC over switches only to the destination NIC (an HPN NIC has two ports, to two
ToRs, and still does not carry other traffic between them).

Check:  fabric-lab lab check 7 --program fabrics_lab.py
"""

from __future__ import annotations

from topos.model import FabricSpec


def path_count(spec: FabricSpec, src: str, dst: str) -> tuple[int, int]:
    """(switches on a shortest path, number of shortest paths) from NIC `src` to NIC `dst`.

    Hint: breadth-first search from `src` over a graph of the switches plus the two NICs,
    counting for every node the number of shortest paths that reach it (the count of a node is
    the sum of the counts of its neighbours one step closer)."""
    # TODO 1: the graph: which nodes may a path use?
    # TODO 2: the breadth-first search with path counts.
    # TODO 3: switches crossed = hops - 1.
    return 1, 1
