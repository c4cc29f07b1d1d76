"""Rank placement figures (`jobs.placement`): EFLOPS' HDRM map, BiGraph link conflicts and
fluid times of halving-doubling, link loads, the topology-aware ring; no network."""

from __future__ import annotations

import statistics

import pytest

from jobs.ccl.collectives import build
from jobs.ccl.schedule import Schedule
from jobs.gpus import Gpu
from jobs.placement import (
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


def nics(n: int) -> list[Gpu]:
    """n ranks, each NIC its own server (every flow over the fabric)."""
    return [Gpu(f"s{i}", 0, f"n{i}", f"10.0.0.{i + 1}", 0) for i in range(n)]


def halving_doubling(n: int, size: int) -> Schedule:
    """Rabenseifner's allreduce, distances 1, 2, 4, ... in reduce-scatter."""
    return build("all_reduce", "hd", nics(n), size)


def far_first(rank_host: list[int]) -> list[int]:
    """The placement under which the near-first schedule runs the far-first one (distances
    n/2, n/4, ..., 1): rank r takes the host of rank bit-reverse(r), so the partner one bit
    k away is the partner bit (log n - 1 - k) away in the original ranks."""
    bits = len(rank_host).bit_length() - 1
    return [rank_host[int(f"{r:0{bits}b}"[::-1], 2)] for r in range(len(rank_host))]


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
    s = halving_doubling(m * n, 1 << 20)
    assert conflicts_per_step(s, hdrm_map(m, n), switch_of, route) == [1] * 10
    assert conflicts_per_step(_rs_phase(s), list(range(32)), switch_of, route) == [0, 0, 4, 4, 4]
    randoms = [conflicts_per_step(_rs_phase(s), random_order(range(32), seed), switch_of, route)
               for seed in range(100)]
    for step in range(5):  # "around [3,4,3,3,4]"
        assert 3 <= statistics.mean(r[step] for r in randoms) <= 4


def test_bigraph_fluid_allreduce_times_m4_n8():
    m, n = 4, 8
    route, switch_of = bigraph_route(n), lambda h: h // m
    near = halving_doubling(32, 1 << 20)
    assert fluid_time(near, hdrm_map(m, n), switch_of, route) == pytest.approx(2 * 31 / 32)
    assert fluid_time(near, list(range(32)), switch_of, route) == pytest.approx(3.25)
    assert fluid_time(near, far_first(list(range(32))), switch_of, route) == pytest.approx(7.1875)
    rnd = [fluid_time(near, random_order(range(32), seed), switch_of, route) for seed in range(100)]
    assert statistics.mean(rnd) == pytest.approx(6.6, abs=0.3)


def test_far_first_placement_pairs_ranks_n_over_2_apart_first():
    s = halving_doubling(8, 8000)
    hosts = far_first(list(range(8)))
    pairs = [{(hosts[f.src], hosts[f.dst]) for f in st.flows} for st in s.steps[:3]]
    assert pairs == [
        {(0, 4), (4, 0), (1, 5), (5, 1), (2, 6), (6, 2), (3, 7), (7, 3)},
        {(0, 2), (2, 0), (1, 3), (3, 1), (4, 6), (6, 4), (5, 7), (7, 5)},
        {(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4), (6, 7), (7, 6)},
    ]


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
