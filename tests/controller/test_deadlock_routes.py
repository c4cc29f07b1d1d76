"""The buffer-dependency check (controller/deadlock.py) on every fabric and on routes that loop."""

from __future__ import annotations

import copy

import networkx as nx
import pytest

from controller.deadlock import (
    CyclicDependency,
    acyclic_routes,
    channel_dependencies,
    check_routes,
    find_cycle,
)
from controller.routes import compute_routes
from experiments.pfc_deadlock.ring import clockwise_routes, ring_fabric
from topos import FABRICS, build_fabric


def _reaches(spec, plan, nic) -> bool:
    """Every switch has a route to `nic` and the routes towards it form no forwarding loop."""
    prefix = f"{nic.ip}/32"
    graph = nx.DiGraph()
    for sw, routes in plan.items():
        hops = routes.routes.get(prefix, ())
        if not hops:
            return False
        graph.add_edges_from((sw, hop.neighbour) for hop in hops)
    return nx.is_directed_acyclic_graph(graph)


UP_DOWN = sorted(set(FABRICS) - {"bigraph"})


@pytest.mark.parametrize("fabric", UP_DOWN)
def test_up_down_routing_of_every_fabric_is_accepted(fabric):
    spec = build_fabric(fabric)
    plan = compute_routes(spec)
    deps = channel_dependencies(spec, plan)
    assert sum(len(d) for d in deps.values()) > 0  # it looked at real turns
    check_routes(spec, plan)
    assert find_cycle(deps) is None


def test_bigraph_shortest_paths_are_not_up_down_and_are_pruned_to_acyclic():
    """BiGraph's hosts sit on both groups, so its shortest paths transit a switch downwards and
    upwards (lo -> up -> lo for one pair, up -> lo -> up for another): a cycle."""
    spec = build_fabric("bigraph")
    plan = compute_routes(spec)
    with pytest.raises(CyclicDependency):
        check_routes(spec, plan)
    fixed = acyclic_routes(spec, plan)
    check_routes(spec, fixed)
    assert all(_reaches(spec, fixed, nic) for nic in spec.host_nics())


def test_a_cyclic_route_set_is_refused_with_its_cycle():
    spec = ring_fabric(4)
    plan = clockwise_routes(spec, compute_routes(spec))
    with pytest.raises(CyclicDependency) as err:
        check_routes(spec, plan)
    cycle = err.value.cycle
    assert len(cycle) == 4
    # every channel of the cycle goes clockwise
    assert sorted(cycle) == [(f"r{i}", spec.port_to(f"r{i}", f"r{(i + 1) % 4}")) for i in range(4)]
    assert f"r0:{spec.port_to('r0', 'r1')}" in str(err.value)


def test_ecmp_on_a_ring_is_cyclic_and_pruning_breaks_every_cycle():
    spec = ring_fabric(4)
    plan = compute_routes(spec)
    with pytest.raises(CyclicDependency):
        check_routes(spec, plan)
    fixed = acyclic_routes(spec, plan)
    check_routes(spec, fixed)
    for nic in spec.host_nics():
        assert _reaches(spec, fixed, nic)
    assert plan != fixed and compute_routes(spec)["r0"].routes == plan["r0"].routes  # copied


def test_a_bounce_after_two_link_failures_closes_a_cycle():
    """spine0-leaf2 and spine1-leaf3 fail: shortest paths from spine0 to leaf2's hosts now go
    down to another leaf and up again (and the same for spine1 and leaf3): up-down-up."""
    spec = build_fabric("leafspine", leaves=4, spines=2)
    live = copy.copy(spec)
    live.links = [ln for ln in spec.links
                  if {ln.a.node, ln.b.node} not in ({"spine0", "leaf2"}, {"spine1", "leaf3"})]
    assert len(live.links) == len(spec.links) - 2
    plan = compute_routes(live)
    with pytest.raises(CyclicDependency) as err:
        check_routes(live, plan)
    assert {sw for sw, _ in err.value.cycle} >= {"spine0", "spine1"}
    fixed = acyclic_routes(live, plan)
    check_routes(live, fixed)
    for nic in live.host_nics():
        assert _reaches(live, fixed, nic)


def test_the_controllers_filter_passes_acyclic_routes_and_replaces_cyclic_ones(caplog):
    from controller.deadlock import deadlock_free_routes

    spec = build_fabric("leafspine")
    plan = compute_routes(spec)
    assert deadlock_free_routes(spec, plan) == plan
    ring = ring_fabric(4)
    cyclic = clockwise_routes(ring, compute_routes(ring))
    with pytest.raises(CyclicDependency):  # clockwise has no ECMP member left to drop
        deadlock_free_routes(ring, cyclic)
    assert "routes refused" in caplog.text
    fixed = deadlock_free_routes(ring, compute_routes(ring))
    check_routes(ring, fixed)
