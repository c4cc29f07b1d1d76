"""Traffic manager: capacity and tail drop, rate limit, strict priority, pause (virtual clock)."""

import pytest

from p4switch.switch.tm import TrafficManager


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_tail_drop_at_the_configured_depth_and_enq_qdepth():
    tm = TrafficManager(clock=Clock())
    tm.set_queue_depth(3, 1)
    depths = [tm.enqueue(1, 0, f"p{i}", now=0.0) for i in range(5)]
    assert depths == [0, 1, 2, None, None]
    assert tm.stats(1).dropped == 2 and tm.depth(1) == 3
    out = tm.dequeue_due(0.0)
    assert [(o[2], o[4], o[5]) for o in out] == [("p0", 0, 2), ("p1", 1, 1), ("p2", 2, 0)]


def test_default_depth_is_64_and_global_setting_applies_to_new_ports():
    tm = TrafficManager()
    assert [tm.enqueue(7, 0, i, 0.0) is not None for i in range(65)].count(True) == 64
    tm.set_queue_depth(2)
    assert tm.queues(8)[0].capacity == 2 and tm.queues(7)[0].capacity == 2


def test_rate_limit_spaces_departures():
    tm = TrafficManager()
    tm.set_queue_rate(10, 2)  # 10 pps: one every 100 ms
    for i in range(3):
        tm.enqueue(2, 0, i, now=0.0)
    assert [o[2] for o in tm.dequeue_due(0.0)] == [0]
    assert tm.next_due() == pytest.approx(0.1)
    assert tm.dequeue_due(0.05) == []
    assert [o[2] for o in tm.dequeue_due(0.1)] == [1]
    assert [o[2] for o in tm.dequeue_due(0.25)] == [2]
    assert tm.next_due() is None


def test_strict_priority_serves_the_highest_priority_first():
    tm = TrafficManager(priority_queues=3)
    tm.enqueue(1, 0, "low", 0.0)
    tm.enqueue(1, 2, "high", 0.0)
    tm.enqueue(1, 1, "mid", 0.0)
    assert [o[2] for o in tm.dequeue_due(0.0)] == ["high", "mid", "low"]
    assert tm.enqueue(1, 3, "bad", 0.0) is None and tm.priority_drops == 1
    with pytest.raises(ValueError, match="priority 3 out of range"):
        tm.set_queue_rate(5, 1, 3)


def test_pause_holds_a_queue_until_it_expires_or_resumes():
    clock = Clock()
    tm = TrafficManager(priority_queues=2, clock=clock)
    tm.pause(1, 1, 0.5)
    tm.enqueue(1, 1, "paused", clock.t)
    tm.enqueue(1, 0, "other", clock.t)
    assert [o[2] for o in tm.dequeue_due(clock.t)] == ["other"]  # other priorities still flow
    assert tm.is_paused(1, 1) and tm.next_due() == pytest.approx(clock.t + 0.5)
    assert [o[2] for o in tm.dequeue_due(clock.t + 0.5)] == ["paused"]
    tm.pause(1, 1, 10)
    tm.enqueue(1, 1, "again", clock.t)
    assert tm.dequeue_due(clock.t + 1) == []
    tm.resume(1, 1)
    assert [o[2] for o in tm.dequeue_due(clock.t + 1)] == ["again"]


def test_a_paused_backlog_drains_at_the_queue_rate_from_the_resume_not_in_one_burst():
    clock = Clock()
    tm = TrafficManager(clock=clock)
    tm.set_queue_rate(10, 1)  # one packet every 100 ms
    tm.pause(1, 0, 1.0)
    for i in range(4):  # stamped 0, 0.1, 0.2, 0.3 s from now: all stale when the pause ends
        tm.enqueue(1, 0, i, clock.t)
    assert tm.dequeue_due(clock.t + 0.99) == []
    assert [o[2] for o in tm.dequeue_due(clock.t + 1.05)] == [0]
    assert tm.next_due() == pytest.approx(clock.t + 1.1)
    assert [o[2] for o in tm.dequeue_due(clock.t + 1.25)] == [1, 2]  # due 1.1 and 1.2
    tm.enqueue(1, 0, 4, clock.t + 1.25)  # a newcomer queues behind the re-paced backlog
    assert [o[2] for o in tm.dequeue_due(clock.t + 1.35)] == [3]
    assert tm.next_due() == pytest.approx(clock.t + 1.4)
    # resume() before the pause expires: pacing starts at the resume
    tm.pause(1, 0, 10)
    for i in range(5, 8):
        tm.enqueue(1, 0, i, clock.t)
    clock.t += 2.0
    tm.resume(1, 0)
    assert [o[2] for o in tm.dequeue_due(clock.t)] == [4]
    assert tm.next_due() == pytest.approx(clock.t + 0.1)
    assert [o[2] for o in tm.dequeue_due(clock.t + 0.2)] == [5, 6]


def test_an_unlimited_queue_sends_its_paused_backlog_at_once():
    clock = Clock()
    tm = TrafficManager(clock=clock)
    tm.pause(1, 0, 0.5)
    for i in range(3):
        tm.enqueue(1, 0, i, clock.t)
    assert [o[2] for o in tm.dequeue_due(clock.t + 0.5)] == [0, 1, 2]


def test_bypass_only_for_an_idle_unlimited_queue():
    clock = Clock()
    tm = TrafficManager(priority_queues=2, clock=clock)
    assert tm.bypass(1, 0, clock.t) and tm.stats(1, 0).enqueued == 1
    tm.set_queue_rate(10, 1, 0)
    assert not tm.bypass(1, 0, clock.t)  # rate-limited: must queue
    assert tm.bypass(1, 1, clock.t)
    tm.enqueue(2, 0, "waiting", clock.t)
    tm.pause(2, 0, 1)
    assert not tm.bypass(2, 0, clock.t)  # backlog (and pause) keep FIFO order
    tm.set_queue_depth(0, 3)
    assert not tm.bypass(3, 0, clock.t) and tm.enqueue(3, 0, "x", clock.t) is None
    assert not tm.bypass(1, 2, clock.t)  # no such priority: enqueue drops it
