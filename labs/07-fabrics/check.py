"""Checks of lab 7 (the three fabrics): the student's path count on leaf-spine, HPN 7.0, AIPod
and BiGraph at their default scale, against the fabric analysis `fabric-lab show` prints."""

from __future__ import annotations

import networkx as nx

from fabric_lab.labkit import Step, StepFailed, Work
from topos import build_fabric
from topos.analysis import shortest_paths

TITLE = "The three fabrics: paths, tiers and ECMP width"
MINUTES = 60
PREREQS = "labs 1 and 6; the fabric pages (docs/fabrics/*.md)"
FILE = "fabrics_lab.py"
FORBIDDEN_IMPORTS = {
    "topos.analysis": "the fabric analysis that `fabric-lab show` prints is the answer; count the "
                      "paths yourself",
    "networkx": "write the breadth-first search yourself",
    "importlib": "import modules with import statements",
}


def _count(work: Work, spec, src: str, dst: str) -> tuple[int, int]:
    got = work.function("path_count")(spec, src, dst)
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(v, int) for v in got)):
        raise StepFailed(f"path_count(spec, {src!r}, {dst!r}) returned {got!r}, not "
                         f"(switches, paths)")
    return got


def _against_analysis(work: Work, fabric: str, sources: int = 2) -> str:
    spec = build_fabric(fabric)
    nics = [nic.name for nic in spec.host_nics()]
    classes: set[tuple[int, int]] = set()
    for src in nics[:sources]:
        for dst in nics:
            if dst == src:
                continue
            paths = shortest_paths(spec, src, dst)
            want = (len(paths[0]), len(paths))
            got = _count(work, spec, src, dst)
            if got != want:
                raise StepFailed(f"{fabric}: {src} -> {dst}: you count {got[1]} path(s) over "
                                 f"{got[0]} switch(es); the fabric has {want[1]} over {want[0]}")
            classes.add(want)
    shown = ", ".join(f"{p} path(s) over {s} switch(es)" for s, p in sorted(classes))
    return f"{fabric}: {shown}"


def loads(work: Work) -> str:
    work.function("path_count")
    return "path_count() found (no fabric analysis imported)"


def leafspine(work: Work) -> str:
    spec = build_fabric("leafspine")
    for dst, want in (("h1n0", (1, 1)), ("h2n0", (3, 2))):
        got = _count(work, spec, "h0n0", dst)
        if got != want:
            raise StepFailed(f"leafspine h0n0 -> {dst}: {got}, expected {want} "
                             f"(`fabric-lab show leafspine` lists the path classes)")
    return _against_analysis(work, "leafspine")


def hpn7(work: Work) -> str:
    return _against_analysis(work, "hpn7")


def aipod(work: Work) -> str:
    return _against_analysis(work, "aipod")


def bigraph(work: Work) -> str:
    return _against_analysis(work, "bigraph")


def hidden_fabrics(work: Work) -> str:
    """Hidden cases: fabrics at scales drawn per run, some with links failed, and NIC pairs in a
    random order."""
    rng = work.rng("fabrics")
    shown = []
    scales = [("leafspine", {"leaves": rng.randint(2, 6), "spines": rng.randint(1, 5)}),
              ("bigraph", {"switches_per_group": rng.randint(2, 5)}),
              ("aipod", {"rails": rng.randint(1, 4), "spines_per_rail": rng.randint(1, 3)}),
              ("hpn7", {"aggs_per_plane": rng.randint(1, 3)})]
    for fabric, params in scales:
        spec = build_fabric(fabric, **params)
        failed = rng.sample([ln for ln in spec.links if spec.is_switch(ln.a.node)
                             and spec.is_switch(ln.b.node)], k=rng.randint(0, 2))
        spec.links = [ln for ln in spec.links if ln not in failed]
        nics = [nic.name for nic in spec.host_nics()]
        for src, dst in (rng.sample(nics, 2) for _ in range(6)):
            try:
                paths = shortest_paths(spec, src, dst)
            except (nx.NetworkXNoPath, nx.NodeNotFound):  # cut apart: not a case
                continue
            want, got = (len(paths[0]), len(paths)), _count(work, spec, src, dst)
            if got != want:
                cut = ", ".join(f"{ln.a.node}~{ln.b.node}" for ln in failed) or "none"
                raise StepFailed(f"hidden case: {fabric} {params}, links down: {cut}; {src} -> "
                                 f"{dst}: you count {got[1]} path(s) over {got[0]} switch(es); "
                                 f"the fabric has {want[1]} over {want[0]}")
        shown.append(fabric)
    return f"hidden scales and failed links of {', '.join(shown)}: every count right"


STEPS = [
    Step("defines path_count()", loads, "keep the function's name and arguments"),
    Step("leaf-spine: 1 path under one leaf, 2 across the spines", leafspine,
         "TODO 2: a node's count is the sum over neighbours one hop closer to the source"),
    Step("HPN 7.0: dual-ToR, dual-plane, rails", hpn7,
         "TODO 1: NICs are not transit nodes; a dual-port NIC starts paths on both its ToRs"),
    Step("AIPod: rails, aggregation groups, 3 tiers", aipod,
         "paths that leave the aggregation group go up to the superspines and multiply"),
    Step("BiGraph: two switch groups, complete bipartite", bigraph,
         "every switch of one group links to every switch of the other"),
    Step("hidden fabrics: other scales, failed links", hidden_fabrics,
         "count from the graph you are given (spec.links), never from a fabric's name or size"),
]
