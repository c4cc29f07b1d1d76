"""Checks of lab 7 (the three fabrics): the student's path count on leaf-spine, HPN 7.0, AIPod
and BiGraph at their default scale, against the fabric analysis `fabric-lab show` prints."""

from __future__ import annotations

from fabric_lab.labkit import Step, StepFailed, Work
from topos import build_fabric
from topos.analysis import shortest_paths

TITLE = "The three fabrics: paths, tiers and ECMP width"
MINUTES = 60
PREREQS = "labs 1 and 6; the fabric pages (docs/fabrics/*.md)"
FILE = "fabrics_lab.py"


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
    return "path_count() found"


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
]
