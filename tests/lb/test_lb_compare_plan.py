"""lb-compare's planning and metrics, without a network."""

from __future__ import annotations

from collections import Counter

import pytest

from experiments.framework import resolve_params
from experiments.framework.engine_switch import flow_index
from experiments.framework.lb_lab import LinkLoads
from experiments.lb_compare.experiment import EXPERIMENT, end_leaves, fabric, imbalance, plan, uplinks


@pytest.fixture(scope="module")
def spec():
    return fabric("leafspine", resolve_params(EXPERIMENT, True, {}))


def test_flows_run_between_two_leaves_over_every_uplink(spec):
    first, last = end_leaves(spec)
    assert (first, last) == ("leaf0", "leaf1")
    assert len(uplinks(spec, first)) == 4
    flows = plan(spec, 8, seed=0, flow_bytes=4096)
    assert Counter(f.src for f in flows) == {f"h{i}n0": 2 for i in range(4)}
    assert Counter(f.dst for f in flows) == {f"h{i}n0": 2 for i in range(4, 8)}
    assert len({f.sport for f in flows}) == 8
    assert plan(spec, 8, seed=0, flow_bytes=4096) == flows  # seeded
    assert plan(spec, 8, seed=1, flow_bytes=4096) != flows


def test_dlb_plans_never_reuse_a_register_index_within_a_mode(spec):
    ip = {nic.name: nic.ip for nic in spec.host_nics()}
    taken: set[int] = set()
    indices = []
    for seed in range(4):
        for n in (2, 4, 8, 16):
            indices += [flow_index(f.sport, src_ip=ip[f.src], dst_ip=ip[f.dst])
                        for f in plan(spec, n, seed, 4096, taken)]
    assert len(indices) == len(set(indices)) == 120
    assert set(indices) == taken


def test_imbalance_is_busiest_over_mean_including_idle_uplinks():
    loads = LinkLoads(bytes=Counter({("l", "s0"): 300, ("l", "s1"): 100}))
    links = [("l", "s0"), ("l", "s1"), ("l", "s2"), ("l", "s3")]
    assert imbalance(loads, links) == (3.0, 2)
    with pytest.raises(RuntimeError, match="no traffic"):
        imbalance(LinkLoads(), links)
