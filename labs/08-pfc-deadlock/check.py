"""Checks of lab 8 (PFC deadlock): the student's channel dependency graph and cycle search on
handout cases, hidden random ones, and the routes the controller computes for real fabrics
(judged by `controller.deadlock`, the check the controller and `fabric-lab run pfc-deadlock`
use)."""

from __future__ import annotations

import copy
from itertools import pairwise

import networkx as nx

from fabric_lab.labkit import Step, StepFailed, Work

TITLE = "PFC deadlock: the cyclic buffer dependency"
MINUTES = 45
PREREQS = "lab 5; docs/mechanisms/pfc-deadlock.md"
FILE = "deadlock_lab.py"
FORBIDDEN_IMPORTS = {
    "controller.deadlock": "the controller's check is the answer; build the graph yourself",
    "networkx": "write the depth-first search yourself",
    "importlib": "import modules with import statements",
}

RING = [["r0", "r1", "r2"], ["r1", "r2", "r3"], ["r2", "r3", "r0"], ["r3", "r0", "r1"]]


def _reference(paths: list[list[str]]) -> dict:
    deps: dict = {}
    for path in paths:
        channels = list(pairwise(path))
        for i, here in enumerate(channels):
            deps.setdefault(here, set())
            if i + 1 < len(channels):
                deps[here].add(channels[i + 1])
    return deps


def _acyclic(deps: dict) -> bool:
    graph = nx.DiGraph()
    graph.add_nodes_from(deps)
    graph.add_edges_from((a, b) for a, onward in deps.items() for b in onward)
    return nx.is_directed_acyclic_graph(graph)


def _deps(work: Work, paths: list[list[str]]) -> dict:
    got = work.function("dependencies")([list(p) for p in paths])
    if not isinstance(got, dict):
        raise StepFailed(f"dependencies() returned {type(got).__name__}, not a dict")
    return {k: set(v) for k, v in got.items()}


def _check_cycle(work: Work, deps: dict, what: str) -> str:
    got = work.function("find_cycle")(copy.deepcopy(deps))
    if _acyclic(deps):
        if got is not None:
            raise StepFailed(f"{what}: the graph is acyclic, but find_cycle returned {got!r}")
        return "none"
    if not got:
        raise StepFailed(f"{what}: the graph has a cycle, but find_cycle returned {got!r}")
    cycle = [tuple(c) for c in got]
    for i, here in enumerate(cycle):
        onward = cycle[(i + 1) % len(cycle)]
        if onward not in deps.get(here, ()):
            raise StepFailed(f"{what}: {here} does not depend on {onward}; {got!r} is not a "
                             f"cycle of the graph")
    return f"{len(cycle)} channels"


def loads(work: Work) -> str:
    for name in ("dependencies", "find_cycle", "deadlock_free"):
        work.function(name)
    return "dependencies(), find_cycle(), deadlock_free() found"


def builds_graph(work: Work) -> str:
    paths = [["a", "b", "c"], ["b", "c", "d"], ["x", "y"]]
    got, want = _deps(work, paths), _reference(paths)
    if got != want:
        raise StepFailed(f"paths {paths}: you build {got}, the graph is {want}")
    rng = work.rng("lab8-graph")
    switches = [f"s{i}" for i in range(6)]
    for _ in range(20):
        hidden = [rng.sample(switches, rng.randint(2, 4)) for _ in range(rng.randint(1, 5))]
        if _deps(work, hidden) != _reference(hidden):
            raise StepFailed(f"hidden case {hidden}: the graph is {_reference(hidden)}")
    return "handout case and 20 hidden ones"


def finds_cycles(work: Work) -> str:
    ring = _check_cycle(work, _reference(RING), "the clockwise ring")
    line = _check_cycle(work, _reference(RING[:3]), "three of the ring's four flows")
    rng = work.rng("lab8-cycles")
    kinds = {"cyclic": 0, "acyclic": 0}
    for _ in range(30):  # a ring of k switches in a random order, flows two hops on
        k = rng.randint(3, 6)
        names = rng.sample([f"s{i}" for i in range(8)], k)
        paths = [[names[i], names[(i + 1) % k], names[(i + 2) % k]] for i in range(k)]
        if rng.random() < 0.5:
            paths.pop(rng.randrange(k))  # one turn missing: the ring is open
        paths += [rng.sample(names, 2) for _ in range(rng.randint(0, 2))]
        rng.shuffle(paths)
        deps = _reference(paths)
        _check_cycle(work, deps, f"hidden case {paths}")
        kinds["acyclic" if _acyclic(deps) else "cyclic"] += 1
    return (f"ring: a cycle of {ring}; three flows: {line}; 30 hidden cases "
            f"({kinds['cyclic']} cyclic)")


def _fabric_paths(spec, plan) -> list[list[str]]:
    """Every path the routes allow from every switch to every host (ECMP: all members)."""
    paths = []
    for nic in spec.host_nics():
        prefix = f"{nic.ip}/32"
        for start in plan:
            todo = [[start]]
            while todo:
                path = todo.pop()
                hops = [h.neighbour for h in plan[path[-1]].routes.get(prefix, ())]
                switches = [n for n in hops if spec.is_switch(n)]
                if len(switches) < len(hops) or not hops:
                    paths.append(path)
                todo += [[*path, n] for n in switches]
    return paths


def real_routes(work: Work) -> str:
    from controller.deadlock import channel_dependencies, find_cycle
    from controller.routes import compute_routes
    from experiments.pfc_deadlock.ring import clockwise_routes, ring_fabric
    from topos import build_fabric

    leafspine = build_fabric("leafspine", leaves=4, spines=2)
    failed = copy.copy(leafspine)
    failed.links = [ln for ln in leafspine.links
                    if {ln.a.node, ln.b.node} not in ({"spine0", "leaf2"}, {"spine1", "leaf3"})]
    ring = ring_fabric(4)
    cases = {"leaf-spine": (leafspine, compute_routes(leafspine)),
             "leaf-spine after spine0-leaf2 and spine1-leaf3 fail": (failed,
                                                                      compute_routes(failed)),
             "ring, clockwise": (ring, clockwise_routes(ring, compute_routes(ring))),
             "hpn7": (build_fabric("hpn7"), None)}
    shown = []
    for name, (spec, plan) in cases.items():
        plan = plan or compute_routes(spec)
        want = find_cycle(channel_dependencies(spec, plan)) is None
        got = work.function("deadlock_free")(_fabric_paths(spec, plan))
        if got is not want:
            raise StepFailed(f"{name}: deadlock_free says {got}; the controller's check says "
                             f"{'no cycle' if want else 'a cycle'}")
        shown.append(f"{name}: {'free' if want else 'can deadlock'}")
    return "; ".join(shown)


STEPS = [
    Step("defines dependencies(), find_cycle(), deadlock_free()", loads,
         "keep the functions' names and arguments"),
    Step("builds the channel dependency graph", builds_graph,
         "TODO 1: channels are consecutive switch pairs; each depends on the next of its path"),
    Step("finds a cycle, and none where there is none", finds_cycles,
         "TODO 2: depth-first search; a channel met again while still on the current path "
         "closes a cycle"),
    Step("judges the routes of real fabrics as the controller does", real_routes,
         "TODO 3: deadlock-free exactly when find_cycle finds nothing"),
]
