"""The C traffic manager (p4switch/cdp/c/tm.c) against the Python one (p4switch/switch/tm.py):
the same random sequences of enqueues, bypasses, dequeues, pauses and queue settings on a
virtual clock give the same results, call by call, down to the floating-point times."""

from __future__ import annotations

import random

import pytest

from p4switch.native import NativeUnavailable
from p4switch.switch.tm import TrafficManager


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def c_manager(priority_queues: int, clock: Clock):
    from p4switch.cdp.tm import CTrafficManager

    try:
        return CTrafficManager(priority_queues, clock)
    except NativeUnavailable as e:
        pytest.skip(f"the C data plane cannot be built here: {e}")


def call(tm, name: str, *args):
    try:
        return getattr(tm, name)(*args)
    except ValueError:
        return "ValueError"


def random_step(rng: random.Random, clock: Clock, prios: int) -> tuple[str, tuple]:
    """One operation and its arguments; the clock moves on now and then."""
    if rng.random() < 0.3:
        clock.t += rng.choice([0.0, 1e-4, 1e-3, 0.01, 0.05])
    now = clock.t
    port = rng.randrange(1, 5)
    prio = rng.randrange(-1, prios + 1) if rng.random() < 0.05 else rng.randrange(prios)
    kind = rng.random()
    if kind < 0.40:
        return "enqueue", (port, prio, rng.random(), now)
    if kind < 0.55:
        return "bypass", (port, prio, now)
    if kind < 0.75:
        return "dequeue_due", (now,)
    if kind < 0.82:
        return "next_due", ()
    if kind < 0.88:
        seconds = rng.choice([0.0, 0.0, 0.002, 0.02, 0.2])
        return "pause", (port, max(prio, 0) % prios, seconds)
    if kind < 0.94:
        target = (None, None) if rng.random() < 0.2 else (port, rng.choice([None, prio]))
        return "set_queue_rate", (rng.choice([0, 0, 50, 400, 3000]), *target)
    target = (None, None) if rng.random() < 0.2 else (port, rng.choice([None, prio]))
    return "set_queue_depth", (rng.choice([0, 1, 3, 8, 64]), *target)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("prios", [1, 3])
def test_random_sequences_give_the_same_results(seed, prios):
    rng = random.Random(seed * 10 + prios)
    py_clock, c_clock = Clock(), Clock()
    py, c = TrafficManager(prios, py_clock), c_manager(prios, c_clock)
    try:
        dequeued = 0
        for step in range(3000):
            name, args = random_step(rng, py_clock, prios)
            c_clock.t = py_clock.t
            expected, got = call(py, name, *args), call(c, name, *args)
            assert got == expected, f"step {step}: {name}{args}"
            assert len(c) == len(py)
            if name == "dequeue_due":
                dequeued += len(expected)
        assert dequeued > 200  # the sequences reach the queues' interesting states
        for port in range(1, 5):
            for prio in range(prios):
                assert c.stats(port, prio) == py.stats(port, prio)
                assert c.depth(port, prio) == py.depth(port, prio)
        assert c.priority_drops == py.priority_drops
        c.clear()
        py.clear()
        assert len(c) == len(py) == 0 and c.next_due() is py.next_due() is None
    finally:
        c.close()


def test_a_pause_then_resume_paces_the_backlog_in_both():
    for tm_of in (lambda clock: TrafficManager(1, clock), lambda clock: c_manager(1, clock)):
        clock = Clock()
        tm = tm_of(clock)
        tm.set_queue_rate(100, 1)  # one every 10 ms
        tm.pause(1, 0, 1.0)
        for i in range(3):
            tm.enqueue(1, 0, i, clock.t)
        assert tm.dequeue_due(clock.t + 0.5) == []
        clock.t += 0.5
        tm.resume(1, 0)
        times = [tm.next_due()]
        for i in range(3):
            assert tm.dequeue_due(times[-1] - 1e-6) == []  # not before its time
            assert [o[2] for o in tm.dequeue_due(times[-1])] == [i]
            times.append(tm.next_due())
        assert times[:3] == pytest.approx([100.5, 100.51, 100.52])
        assert times[3] is None
