"""Iteration accounting and the slowest-link verdict, on given collective and message times
(no network)."""

from __future__ import annotations

import pytest

from jobs.iteration import Timed, iteration
from jobs.scale import Scale
from jobs.slowest import FlowTime, blame, late_flows
from jobs.train import CollectiveRun, JobScale, lay_out
from jobs.workload import validate

JOB = {"name": "j", "servers": 4, "gpus_per_server": 2, "parallelism": {"data": 8},
       "compute_s": 1.0, "gradient_bytes": "64M", "buckets": 4, "backward_fraction": 0.5}


def test_iteration_is_compute_plus_exposed_communication() -> None:
    buckets = [Timed(f"b{i}", 0.1, release, True) for i, release in
               enumerate((0.625, 0.75, 0.875, 1.0))]
    it = iteration(1.0, buckets)
    assert it.total_s == pytest.approx(it.compute_s + it.exposed_s)
    # each bucket runs as it is released; the last, released at 1.0, is all that is exposed
    assert it.total_s == pytest.approx(1.1)
    assert it.hidden_s == pytest.approx(0.3)
    serial = iteration(1.0, [Timed(b.purpose, b.time_s, 1.0, True) for b in buckets])
    assert serial.exposed_s == pytest.approx(0.4)  # nothing hidden without overlap
    assert it.exposed_s < serial.exposed_s


def test_blocking_collectives_extend_the_iteration() -> None:
    it = iteration(1.0, [Timed("tp", 0.2), Timed("b0", 0.3, 1.0, True)])
    assert it.total_s == pytest.approx(1.5)
    assert it.exposed_s == pytest.approx(0.5)
    assert [(s.purpose, s.start) for s in it.spans] == [("tp", 0.0), ("b0", 1.2)]


@pytest.mark.parametrize("overlap", [0.0, 0.5, 1.0])
def test_overlap_reduces_exposed_time_in_a_job(overlap: float) -> None:
    job = validate({**JOB, "overlap": overlap}, "j")
    runs = [_run(c.purpose, 0.1, [0.1] * 8) for c in job.collectives()]
    it = lay_out(job, 0, runs, 8)
    assert it.timeline.total_s == pytest.approx(1.0 + it.timeline.exposed_s)
    # four buckets of 0.1 s; the backward half releases them at 1/8 steps when overlapping
    expected = 0.4 - min(0.4, overlap * 0.5 * 3 / 4) if overlap else 0.4
    assert it.timeline.exposed_s == pytest.approx(max(expected, 0.1))


def test_a_slow_rank_has_the_longest_iteration() -> None:
    job = validate({**JOB, "overlap": False}, "j")
    ends = [0.1] * 8
    ends[5] = 0.3
    runs = [_run(c.purpose, 0.3, ends) for c in job.collectives()]
    it = lay_out(job, 0, runs, 8)
    assert it.slowest_rank == 5
    assert it.rank_s[5] == pytest.approx(1.0 + 4 * 0.3)
    assert it.rank_s[0] == pytest.approx(1.0 + 4 * 0.1)


def _run(purpose: str, t: float, ends: list[float]) -> CollectiveRun:
    return CollectiveRun(0, purpose, "all_reduce", "ring", 1, 8, 1, 1, t, t, 0.0, 0.0, True, 0,
                         0, ends)


def test_job_scale_keeps_the_compute_to_communication_ratio() -> None:
    scale = JobScale(Scale(10e6, 400e9), time_scale=0.5)
    assert scale.bytes_factor == pytest.approx(80_000)
    modelled = 26 << 30
    emulated = scale.emulated_bytes(modelled)
    # moving `emulated` bytes at 10 Mb/s takes time_scale x what `modelled` takes at 400 Gb/s
    assert emulated * 8 / 10e6 == pytest.approx(0.5 * modelled * 8 / 400e9, rel=1e-4)
    assert scale.modelled_s(scale.emulated_s(1.7)) == pytest.approx(1.7)


LINKS = {(s, d): {(f"n{s}", "sw"), ("sw", f"n{d}")} for s in range(4) for d in range(4)}


def _message(step: int, src: int, dst: int, seconds: float) -> FlowTime:
    return FlowTime("dp", step, src, dst, 1000, seconds)


def test_blame_names_the_link_late_messages_share() -> None:
    # ranks 0..3 exchange halving-doubling style; rank 2's downlink is slow
    flows = [_message(k, r, r ^ d, 3.0 if r ^ d == 2 else 1.0)
             for k, d in enumerate((1, 2, 1, 2)) for r in range(4)]
    verdict = blame(flows, lambda s, d: LINKS[(s, d)], {("sw", "n2"): 123})
    assert verdict.link == ("sw", "n2")
    assert verdict.late_ranks == (2,)
    assert verdict.packets == 123
    assert verdict.delay_s == pytest.approx(4 * 2.0)
    assert "sw -> n2" in verdict.describe()
    assert not verdict.tied  # partners change per step: only the downlink is common


def test_even_messages_blame_nothing() -> None:
    flows = [_message(0, 0, 1, 1.0), _message(0, 1, 0, 1.05), _message(1, 0, 1, 0.98)]
    assert late_flows(flows) == []
    verdict = blame(flows, lambda s, d: set())
    assert verdict.link is None
    assert "no link stands out" in verdict.describe()


def test_a_ring_cannot_tell_the_senders_uplink_from_the_downlink() -> None:
    flows = [_message(k, r, (r + 1) % 4, 3.0 if r == 1 else 1.0) for k in range(4)
             for r in range(4)]
    verdict = blame(flows, lambda s, d: LINKS[(s, d)], {("sw", "n2"): 40})
    # both links of the message 1 -> 2 carried only late messages; the counted port wins
    assert verdict.link == ("sw", "n2")
    assert verdict.tied == (("n1", "sw"),)
    assert "equally likely: n1 -> sw" in verdict.describe()


def test_noise_spread_over_links_names_none() -> None:
    flows = [_message(k, r, r ^ (1 + k % 2), 2.0 if r == k % 4 else 1.0)
             for k in range(8) for r in range(4)]  # a different sender late in each step
    verdict = blame(flows, lambda s, d: LINKS[(s, d)])
    assert verdict.link is None
    assert max(verdict.late_share.values()) < 0.75
