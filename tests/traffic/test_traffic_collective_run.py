"""Collectives executed over four real hosts (namespaces on a Linux bridge)."""

from __future__ import annotations

import subprocess
import time

import pytest

from topos.mininet.failures import drop_program
from traffic.collectives.placement import topology_aware_ring
from traffic.collectives.runner import CollectiveRunner
from traffic.collectives.schedule import all_to_all, halving_doubling_allreduce, incast, ring_allreduce

pytestmark = pytest.mark.root
RATE = 20e6


def test_collectives_run_step_by_step_over_real_hosts(star4):
    hosts = [star4.hosts[f"h{i}"] for i in range(4)]
    seen = []
    with CollectiveRunner(hosts, RATE) as runner:
        ring = runner.run(ring_allreduce(4, 256 * 1024), on_step=seen.append)
        hd = runner.run(halving_doubling_allreduce(4, 256 * 1024))
        a2a = runner.run(all_to_all(4, 96 * 1024))
        inc = runner.run(incast(4, 64 * 1024))
    assert seen == ring.steps
    for res, steps in ((ring, 6), (hd, 4), (a2a, 1), (inc, 1)):
        assert res.complete, res.to_dict()
        assert len(res.steps) == steps
        assert all(s.lost_packets == 0 for s in res.steps)
        assert res.total_s == pytest.approx(sum(s.time_s for s in res.steps))
        assert res.algbw_bps == pytest.approx(res.size * 8 / res.total_s)
    # Physics: a step cannot beat its largest flow at the sending host's rate.
    for s in ring.steps:
        assert s.flows == 4 and s.bytes == 4 * 64 * 1024
        assert s.packets == 4 * 64 and s.tagged_packets == 0
        assert 64 * 1024 * 8 / RATE <= s.time_s < 10 * 64 * 1024 * 8 / RATE
    assert hd.steps[0].bytes == 4 * 128 * 1024
    assert hd.steps[0].time_s >= 128 * 1024 * 8 / RATE
    # all-to-all: each host sends 3 flows of 96K / 4 = 24 KB, sharing its rate.
    assert a2a.steps[0].bytes == 12 * 24 * 1024
    assert a2a.steps[0].time_s >= 3 * 24 * 1024 * 8 / RATE
    d = ring.to_dict(busbw_factor=1.5)
    assert d["busbw_bps"] == pytest.approx(1.5 * d["algbw_bps"])
    assert d["hosts"] == ["h0", "h1", "h2", "h3"]


def test_topology_aware_placement_runs(star4):
    by_name = star4.hosts
    order = topology_aware_ring(["h0", "h1", "h2", "h3"], [["h1", "h3"], ["h0", "h2"]])
    with CollectiveRunner([by_name[n] for n in order], RATE) as runner:
        res = runner.run(ring_allreduce(4, 64 * 1024))
    assert res.hosts == ["h1", "h3", "h0", "h2"] and res.complete


def test_a_step_that_cannot_complete_ends_at_the_step_timeout(star4):
    """The bridge port to h1 drops every frame: h1's flows never arrive (go-back-N would retry
    for a minute). The step ends after `step_timeout_s`, incomplete, with what got through."""
    hosts = [star4.hosts[f"h{i}"] for i in range(4)]
    sw, port = star4.prefix + "sw", star4.prefix + "p1"
    for argv in (["tc", "qdisc", "add", "dev", port, "clsact"],
                 ["tc", "filter", "add", "dev", port, "egress", "bpf", "da", "bytecode",
                  drop_program(1.0)]):
        subprocess.run(["ip", "netns", "exec", sw, *argv], check=True, capture_output=True)
    started = time.monotonic()
    with CollectiveRunner(hosts, RATE, step_timeout_s=2.0) as runner:
        res = runner.run(all_to_all(4, 48 * 1024))
    assert time.monotonic() - started < 20
    (step,) = res.steps
    assert not step.complete and not res.complete
    # the flows between the other three hosts (6 of 12, 4 KB each) got through
    assert step.packets >= 6 * 4
