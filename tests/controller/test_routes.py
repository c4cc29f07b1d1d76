"""Route computation on every fabric model, checked against networkx's shortest paths."""

from __future__ import annotations

import networkx as nx
import pytest

from controller.routes import NextHop, compute_routes, default_hash_seed
from topos import FABRICS, build_fabric


def _routing_graph(spec, dest_nic: str) -> nx.MultiGraph:
    """Switches plus the destination NIC: other NICs never forward, so they are not transit."""
    graph = spec.to_networkx()
    graph.remove_nodes_from([n.name for n in spec.host_nics() if n.name != dest_nic])
    return graph


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_next_hops_are_the_first_hops_of_all_shortest_paths(fabric):
    spec = build_fabric(fabric)
    plan = compute_routes(spec)
    checked = 0
    for nic in spec.host_nics():
        graph = _routing_graph(spec, nic.name)
        for sw in spec.switches:
            first_hops = {path[1] for path in nx.all_shortest_paths(graph, sw.name, nic.name)}
            expected = sorted(
                NextHop(port, _far_mac(spec, sw.name, port), neighbour)
                for neighbour in first_hops for port in spec.ports_to(sw.name, neighbour))
            assert list(plan[sw.name].routes[f"{nic.ip}/32"]) == expected, (sw.name, nic.name)
            checked += 1
    assert checked == len(spec.switches) * len(spec.host_nics())


def _far_mac(spec, switch: str, port: int) -> str:
    (link,) = [ln for ln in spec.links_of(switch) if ln.end(switch).port == port]
    return link.other(switch).mac


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_groups_are_shared_by_prefixes_with_equal_next_hop_sets(fabric):
    spec = build_fabric(fabric)
    for routes in compute_routes(spec).values():
        assert set(routes.groups) == set(routes.routes.values())
        assert sorted(routes.groups.values()) == list(range(1, len(routes.groups) + 1))
        by_group: dict[int, set] = {}
        for prefix, hops in routes.routes.items():
            by_group.setdefault(routes.group_of(prefix), set()).add(hops)
        assert all(len(sets) == 1 for sets in by_group.values())
        # members are keyed by port and carry that port's one next hop
        for port, hop in routes.members().items():
            assert hop.port == port
            assert hop.mac == _far_mac(spec, routes.switch, port)


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_host_routes_point_at_the_nic(fabric):
    spec = build_fabric(fabric)
    plan = compute_routes(spec)
    for nic in spec.host_nics():
        for switch, port in spec.attachments(nic.name):
            hops = plan[switch].routes[f"{nic.ip}/32"]
            assert hops == (NextHop(port, nic.mac, nic.name),)


def test_source_macs_and_seeds():
    spec = build_fabric("leafspine")
    plan = compute_routes(spec)
    for sw in spec.switches:
        assert plan[sw.name].source_macs == {ln.end(sw.name).port: ln.end(sw.name).mac
                                             for ln in spec.links_of(sw.name)}
    seeds = {r.hash_seed for r in plan.values()}
    assert len(seeds) == len(spec.switches)
    assert plan["leaf0"].hash_seed == default_hash_seed("leaf0", 1)
    # the hash window (seed[3:0]) differs between tiers, so ECMP stages on a path use other bits
    for fabric in FABRICS:
        spec = build_fabric(fabric)
        plan = compute_routes(spec)
        by_tier = {sw.tier: set() for sw in spec.switches}
        for sw in spec.switches:
            by_tier[sw.tier].add(plan[sw.name].hash_seed & 0xF)
        assert all(len(windows) == 1 for windows in by_tier.values())
        assert len({w for windows in by_tier.values() for w in windows}) == len(by_tier)
    same = compute_routes(spec, hash_seed=7)
    assert {r.hash_seed for r in same.values()} == {7}


def test_hpn7_has_one_ecmp_decision_at_the_tor():
    spec = build_fabric("hpn7")
    plan = compute_routes(spec)
    for sw in spec.switches:
        for prefix, hops in plan[sw.name].routes.items():
            nic = spec.nic_by_ip(prefix.split("/")[0])
            attached = {s for s, _ in spec.attachments(nic.name)}
            if sw.role == "agg":
                assert len(hops) == 1, (sw.name, prefix)   # one path down
            elif sw.name not in attached and spec.params["dual_tor"]:
                # a ToR reaches a remote NIC through every aggregation switch of its plane
                assert {h.neighbour for h in hops} == {
                    s.name for s in spec.switches if s.role == "agg" and s.plane == sw.plane}


def test_bigraph_cross_group_paths_are_unique_and_same_group_paths_spread():
    spec = build_fabric("bigraph")
    plan = compute_routes(spec)
    half = spec.params["switches_per_group"]
    for nic in spec.host_nics():
        (home, _port), = spec.attachments(nic.name)
        home_group = spec.switch(home).group
        for sw in spec.switches:
            if sw.name == home:
                continue
            hops = plan[sw.name].routes[f"{nic.ip}/32"]
            assert len(hops) == (1 if sw.group != home_group else half), (sw.name, nic.name)


def test_unreachable_nics_get_no_route():
    spec = build_fabric("leafspine")
    # cut leaf0 off from both spines: nothing else can reach its hosts
    spec.links = [ln for ln in spec.links
                  if not ({ln.a.node, ln.b.node} & {"leaf0"} and
                          {ln.a.node, ln.b.node} & {"spine0", "spine1"})]
    plan = compute_routes(spec)
    local = [n.ip for n in spec.host_nics() if spec.attachments(n.name)[0][0] == "leaf0"]
    for ip in local:
        assert f"{ip}/32" in plan["leaf0"].routes
        assert f"{ip}/32" not in plan["leaf1"].routes
        assert f"{ip}/32" not in plan["spine0"].routes
