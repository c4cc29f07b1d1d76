"""Each builder's defining properties, checked on the built model (paths with networkx)."""

from __future__ import annotations

import itertools

import pytest

from topos import FABRICS, build_fabric
from topos.analysis import shortest_paths, tier_summary
from topos.model import FabricSpec


def switch_counts(spec: FabricSpec) -> dict[int, int]:
    return {tier: len(sws) for tier, sws in spec.tiers().items()}


def oversub(spec: FabricSpec) -> dict[int, float | None]:
    return {row.tier: row.oversubscription for row in tier_summary(spec)}


def neighbours_by_role(spec: FabricSpec, switch: str, role: str) -> list[str]:
    return [n for n in spec.neighbours(switch) if spec.is_switch(n) and spec.switch(n).role == role]


# ---------------------------------------------------------------- HPN 7.0
class TestHpn7:
    spec = build_fabric("hpn7")

    def test_default_scale_matches_reference(self) -> None:
        assert switch_counts(self.spec) == {1: 8, 2: 4}
        assert len(self.spec.host_nics()) == 8
        assert [h.name for h in self.spec.hosts] == ["srv0", "srv1", "srv2", "srv3"]
        assert self.spec.host("srv1").nics[1].name == "h1n1"

    def test_every_nic_dual_homed_plane_a_then_b_same_rail_and_segment(self) -> None:
        for host in self.spec.hosts:
            for nic in host.nics:
                tors = [self.spec.switch(sw) for sw, _ in self.spec.attachments(nic.name)]
                assert [t.plane for t in tors] == ["A", "B"], nic.name
                assert {t.rail for t in tors} == {nic.rail}
                assert {t.group for t in tors} == {host.group}
                assert {t.role for t in tors} == {"tor"}

    def test_tors_reach_all_aggs_of_own_plane_only(self) -> None:
        for tor in (sw for sw in self.spec.switches if sw.role == "tor"):
            aggs = neighbours_by_role(self.spec, tor.name, "agg")
            own = [sw.name for sw in self.spec.switches
                   if sw.role == "agg" and sw.plane == tor.plane]
            assert sorted(aggs) == sorted(own)

    def test_same_rail_in_segment_crosses_one_switch_without_hashing_in_a_plane(self) -> None:
        paths = shortest_paths(self.spec, "h0n0", "h1n0")
        assert sorted(paths) == [["ta-s0r0"], ["tb-s0r0"]]

    def test_one_ecmp_decision_and_unique_path_down_from_agg(self) -> None:
        for src, dst in [("h0n0", "h0n1"), ("h0n0", "h2n0"), ("h1n1", "h3n0")]:
            paths = shortest_paths(self.spec, src, dst)
            assert len(paths) == 4  # 2 planes x 2 aggs: the ToR uplink is the only choice
            for tor_up, agg, tor_down in paths:
                assert self.spec.switch(tor_up).plane == self.spec.switch(agg).plane
                assert self.spec.switch(tor_down).plane == self.spec.switch(agg).plane
                assert len(self.spec.ports_to(agg, tor_down)) == 1
        # From an aggregation switch down to a NIC: exactly one path inside its plane.
        for agg in (sw for sw in self.spec.switches if sw.role == "agg"):
            for nic in self.spec.host_nics():
                tor = next(sw for sw, _ in self.spec.attachments(nic.name)
                           if self.spec.switch(sw).plane == agg.plane)
                assert len(self.spec.ports_to(agg.name, tor)) == 1

    def test_planes_do_not_meet_without_core(self) -> None:
        for ln in self.spec.links:
            ends = [self.spec.switch(e.node) for e in (ln.a, ln.b) if self.spec.is_switch(e.node)]
            if len(ends) == 2:
                assert ends[0].plane == ends[1].plane

    def test_tor_ratio_is_configurable(self) -> None:
        assert oversub(self.spec)[1] == 1.0
        assert oversub(build_fabric("hpn7", servers_per_segment=4))[1] == 2.0
        assert oversub(build_fabric("hpn7", aggs_per_plane=4))[1] == 0.5
        assert oversub(build_fabric("hpn7", uplink_rate_mbps=5.0))[1] == 2.0

    def test_single_tor_contrast_and_core_tier(self) -> None:
        single = build_fabric("hpn7", dual_tor=False)
        assert all(len(single.attachments(n.name)) == 1 for n in single.host_nics())
        assert {sw.plane for sw in single.switches} == {"A"}
        cored = build_fabric("hpn7", cores=2)
        assert switch_counts(cored) == {1: 8, 2: 4, 3: 2}
        for agg in (sw for sw in cored.switches if sw.role == "agg"):
            assert sorted(neighbours_by_role(cored, agg.name, "core")) == ["core0", "core1"]


# ---------------------------------------------------------------- AIPod
class TestAipod:
    spec = build_fabric("aipod")

    def test_default_scale(self) -> None:
        assert switch_counts(self.spec) == {1: 8, 2: 8, 3: 2}
        assert len(self.spec.host_nics()) == 16
        assert len(self.spec.switches) == 18

    def test_rails_nic_r_on_leaf_r_of_its_group(self) -> None:
        for host in self.spec.hosts:
            for nic in host.nics:
                ((leaf, _),) = self.spec.attachments(nic.name)
                assert leaf == f"lf-g{host.group}r{nic.rail}"

    def test_per_rail_spines_full_mesh_with_rail_leaves_and_superspines(self) -> None:
        for spine in (sw for sw in self.spec.switches if sw.role == "spine"):
            leaves = neighbours_by_role(self.spec, spine.name, "leaf")
            assert sorted(leaves) == [f"lf-g{g}r{spine.rail}" for g in range(2)]
            tops = neighbours_by_role(self.spec, spine.name, "superspine")
            assert sorted(tops) == ["ssp0", "ssp1"]
        for top in ("ssp0", "ssp1"):
            assert len(self.spec.links_of(top)) == 8

    def test_non_blocking_three_tiers_two_way_ecmp(self) -> None:
        assert oversub(self.spec) == {1: 1.0, 2: 1.0, 3: None}
        for leaf in (sw for sw in self.spec.switches if sw.role == "leaf"):
            assert len(neighbours_by_role(self.spec, leaf.name, "spine")) == 2

    def test_path_lengths_by_rail_and_group(self) -> None:
        same_group_same_rail = shortest_paths(self.spec, "h0n2", "h1n2")
        assert same_group_same_rail == [["lf-g0r2"]]
        other_group_same_rail = shortest_paths(self.spec, "h0n2", "h3n2")
        assert len(other_group_same_rail) == 2
        assert all(len(p) == 3 and not any(s.startswith("ssp") for s in p)
                   for p in other_group_same_rail)
        cross_rail = shortest_paths(self.spec, "h0n0", "h3n1")
        assert all(len(p) == 5 and p[2].startswith("ssp") for p in cross_rail)


# ---------------------------------------------------------------- BiGraph
class TestBigraph:
    spec = build_fabric("bigraph")
    upper = [f"up{i}" for i in range(4)]
    lower = [f"lo{i}" for i in range(4)]

    def test_complete_bipartite_only(self) -> None:
        for u, lo in itertools.product(self.upper, self.lower):
            assert len(self.spec.ports_to(u, lo)) == 1
        for group in (self.upper, self.lower):
            for a, b in itertools.combinations(group, 2):
                assert self.spec.ports_to(a, b) == []
        switch_links = [ln for ln in self.spec.links
                        if self.spec.is_switch(ln.a.node) and self.spec.is_switch(ln.b.node)]
        assert len(switch_links) == 16

    def test_hosts_on_both_groups_host_n_on_switch_n_div_m(self) -> None:
        order = self.upper + self.lower
        for n, nic in enumerate(self.spec.host_nics()):
            assert self.spec.attachments(nic.name) == [(order[n // 2], 1 + n % 2)]

    def test_distances_and_unique_cross_group_path(self) -> None:
        nics = [n.name for n in self.spec.host_nics()]
        group = {n.name: self.spec.host_of(n.name).group for n in self.spec.host_nics()}
        for a, b in itertools.combinations(nics, 2):
            paths = shortest_paths(self.spec, a, b)
            assert len(paths[0]) <= 3
            if group[a] != group[b]:
                assert len(paths) == 1 and len(paths[0]) == 2, (a, b, paths)
            elif self.spec.attachments(a)[0][0] != self.spec.attachments(b)[0][0]:
                assert len(paths) == 4 and len(paths[0]) == 3, (a, b, paths)
            else:
                assert len(paths) == 1 and len(paths[0]) == 1

    def test_non_blocking_when_m_is_half_n(self) -> None:
        assert oversub(build_fabric("bigraph", hosts_per_switch=4)) == {1: 1.0}
        assert len(build_fabric("bigraph", hosts_per_switch=4).host_nics()) == 32


# ---------------------------------------------------------------- baselines
def test_leafspine_two_tier_full_mesh() -> None:
    spec = build_fabric("leafspine")
    assert switch_counts(spec) == {1: 4, 2: 2}
    for leaf, spine in itertools.product(range(4), range(2)):
        assert len(spec.ports_to(f"leaf{leaf}", f"spine{spine}")) == 1
    assert len(shortest_paths(spec, "h0n0", "h7n0")) == 2
    assert oversub(build_fabric("leafspine", hosts_per_leaf=4)) == {1: 2.0, 2: None}


def test_fattree_k4() -> None:
    spec = build_fabric("fattree")
    assert switch_counts(spec) == {1: 8, 2: 8, 3: 4}
    assert len(spec.host_nics()) == 16
    assert oversub(spec) == {1: 1.0, 2: 1.0, 3: None}
    assert len(shortest_paths(spec, "h0n0", "h15n0")) == 4
    assert len(shortest_paths(spec, "h0n0", "h2n0")) == 2
    with pytest.raises(ValueError, match="even"):
        build_fabric("fattree", k=3)


# ---------------------------------------------------------------- registry and scale bounds
def test_defaults_fit_this_machine() -> None:
    for name in FABRICS:
        spec = build_fabric(name)
        assert 6 <= len(spec.switches) <= 30, name
        assert 8 <= len(spec.host_nics()) <= 32, name


def test_registry_reports_bad_names_and_values() -> None:
    with pytest.raises(ValueError, match="unknown fabric 'nope'.*hpn7"):
        build_fabric("nope")
    with pytest.raises(ValueError, match="no parameter.*rails.*takes: segments"):
        build_fabric("hpn7", rails=4)
    with pytest.raises(ValueError, match="(?s)segments must be an integer >= 1, not 0.*"
                                         "aggs_per_plane must be an integer >= 1, not -1"):
        build_fabric("hpn7", segments=0, aggs_per_plane=-1)
