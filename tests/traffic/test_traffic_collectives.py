"""Collective schedules against hand-computed flow sets, and rank placement figures."""

from __future__ import annotations

import statistics

import pytest

from traffic.collectives.placement import (
    bigraph_route,
    conflicts_per_step,
    fluid_time,
    hdrm_map,
    link_loads,
    max_link_flows,
    random_order,
    ring_crossings,
    topology_aware_ring,
)
from traffic.collectives.schedule import (
    Flow,
    Schedule,
    all_to_all,
    build,
    halving_doubling_allreduce,
    incast,
    ring_allreduce,
)


def test_ring_allreduce_4_ranks():
    s = ring_allreduce(4, 4000)
    assert len(s.steps) == 6
    want = {Flow(0, 1, 1000), Flow(1, 2, 1000), Flow(2, 3, 1000), Flow(3, 0, 1000)}
    assert all(set(step.flows) == want for step in s.steps)
    assert [st.phase for st in s.steps] == ["reduce-scatter"] * 3 + ["allgather"] * 3
    assert s.busbw_factor == pytest.approx(1.5)
    assert s.total_bytes() == 6 * 4 * 1000


def test_ring_allreduce_8_ranks():
    s = ring_allreduce(8, 8000)
    assert len(s.steps) == 14
    assert set(s.steps[0].flows) == {Flow(r, (r + 1) % 8, 1000) for r in range(8)}
    assert s.steps[13].pairs() == {(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 0)}


def test_halving_doubling_4_ranks():
    s = halving_doubling_allreduce(4, 4000)
    flows = [sorted(st.flows) for st in s.steps]
    assert flows == [
        [Flow(0, 1, 2000), Flow(1, 0, 2000), Flow(2, 3, 2000), Flow(3, 2, 2000)],
        [Flow(0, 2, 1000), Flow(1, 3, 1000), Flow(2, 0, 1000), Flow(3, 1, 1000)],
        [Flow(0, 2, 1000), Flow(1, 3, 1000), Flow(2, 0, 1000), Flow(3, 1, 1000)],
        [Flow(0, 1, 2000), Flow(1, 0, 2000), Flow(2, 3, 2000), Flow(3, 2, 2000)],
    ]


def test_halving_doubling_8_ranks_far_first():
    s = halving_doubling_allreduce(8, 8000, near_first=False)
    assert [st.pairs() for st in s.steps[:3]] == [
        {(0, 4), (4, 0), (1, 5), (5, 1), (2, 6), (6, 2), (3, 7), (7, 3)},
        {(0, 2), (2, 0), (1, 3), (3, 1), (4, 6), (6, 4), (5, 7), (7, 5)},
        {(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4), (6, 7), (7, 6)},
    ]
    assert [st.flows[0].bytes for st in s.steps] == [4000, 2000, 1000, 1000, 2000, 4000]
    with pytest.raises(ValueError, match="power-of-two"):
        halving_doubling_allreduce(6, 100)


def test_all_to_all_and_incast_4_ranks():
    s = all_to_all(4, 4000)
    assert len(s.steps) == 1
    assert set(s.steps[0].flows) == {Flow(a, b, 1000) for a in range(4) for b in range(4) if a != b}
    staged = all_to_all(4, 4000, staged=True)
    assert [st.pairs() for st in staged.steps] == [
        {(0, 1), (1, 2), (2, 3), (3, 0)}, {(0, 2), (1, 3), (2, 0), (3, 1)},
        {(0, 3), (1, 0), (2, 1), (3, 2)}]
    inc = incast(4, 5000, root=2)
    assert set(inc.steps[0].flows) == {Flow(0, 2, 5000), Flow(1, 2, 5000), Flow(3, 2, 5000)}


def test_all_to_all_8_ranks_and_bad_input():
    s = all_to_all(8, 8000)
    assert len(s.steps[0].flows) == 56 and s.busbw_factor == pytest.approx(7 / 8)
    with pytest.raises(ValueError, match="at least 2 ranks"):
        ring_allreduce(1, 10)
    with pytest.raises(ValueError, match="size"):
        incast(4, 0)
    with pytest.raises(ValueError, match="unknown collective"):
        build("tree", 4, 10)


def test_hdrm_reproduces_the_published_map():
    assert hdrm_map(2, 8) == [0, 8, 10, 2, 12, 4, 6, 14, 9, 3, 5, 11, 7, 13, 15, 1]
    for m, n in ((1, 4), (2, 4), (4, 8), (8, 16)):
        assert sorted(hdrm_map(m, n)) == list(range(m * n))
    with pytest.raises(ValueError, match="N/2"):
        hdrm_map(8, 8)


def _rs_phase(s: Schedule) -> Schedule:
    return Schedule(s.name, s.ranks, s.size, s.steps[: len(s.steps) // 2])


def test_bigraph_conflicts_per_step_m4_n8():
    m, n = 4, 8
    route, switch_of = bigraph_route(n), lambda h: h // m
    s = halving_doubling_allreduce(m * n, 1 << 20)
    assert conflicts_per_step(s, hdrm_map(m, n), switch_of, route) == [1] * 10
    assert conflicts_per_step(_rs_phase(s), list(range(32)), switch_of, route) == [0, 0, 4, 4, 4]
    randoms = [conflicts_per_step(_rs_phase(s), random_order(range(32), seed), switch_of, route)
               for seed in range(100)]
    for step in range(5):  # "around [3,4,3,3,4]"
        assert 3 <= statistics.mean(r[step] for r in randoms) <= 4


def test_bigraph_fluid_allreduce_times_m4_n8():
    m, n = 4, 8
    route, switch_of = bigraph_route(n), lambda h: h // m
    near = halving_doubling_allreduce(32, 1 << 20, near_first=True)
    far = halving_doubling_allreduce(32, 1 << 20, near_first=False)
    assert fluid_time(near, hdrm_map(m, n), switch_of, route) == pytest.approx(2 * 31 / 32)
    assert fluid_time(near, list(range(32)), switch_of, route) == pytest.approx(3.25)
    assert fluid_time(far, list(range(32)), switch_of, route) == pytest.approx(7.1875)
    rnd = [fluid_time(near, random_order(range(32), seed), switch_of, route) for seed in range(100)]
    assert statistics.mean(rnd) == pytest.approx(6.6, abs=0.3)


def test_link_loads_over_switch_pairs():
    route = bigraph_route(8)
    flows = [(0, 4), (0, 4), (4, 0), (0, 1), (2, 2)]
    loads = link_loads(flows, route)
    assert loads == {(0, 4): 2, (4, 0): 1, (0, 5): 1, (5, 1): 1}
    assert max_link_flows(flows, route) == 2
    assert max_link_flows([], route) == 0


def test_topology_aware_ring_keeps_groups_together():
    hosts = [f"h{i}" for i in range(8)]
    groups = [["h0", "h2", "h4", "h6"], ["h1", "h3", "h5", "h7"]]  # e.g. two leaves
    assert ring_crossings(hosts, groups) == 8  # naive order alternates groups
    aware = topology_aware_ring(hosts, groups)
    assert aware == ["h0", "h2", "h4", "h6", "h1", "h3", "h5", "h7"]
    assert ring_crossings(aware, groups) == 2  # the minimum for two groups
    with pytest.raises(ValueError, match="no group"):
        topology_aware_ring([*hosts, "h8"], groups)
