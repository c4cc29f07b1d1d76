"""The shared periodic loop: schedule, first round, errors, stop."""

from __future__ import annotations

import threading
import time

from controller.periodic import Periodic


def test_rounds_keep_their_schedule_and_stop_promptly() -> None:
    stamps: list[float] = []
    loop = Periodic("t", 0.05, lambda: stamps.append(time.monotonic()), immediate=True)
    started = time.monotonic()
    loop.start()
    time.sleep(0.33)
    loop.stop()
    stopped = time.monotonic()
    count = len(stamps)
    time.sleep(0.12)
    assert len(stamps) == count, "a round ran after stop()"
    assert stamps[0] - started < 0.05, "immediate: the first round runs at start"
    assert 4 <= count <= 8
    assert stopped - started < 1.0


def test_first_round_waits_a_period_unless_immediate() -> None:
    ran = threading.Event()
    loop = Periodic("t", 0.3, ran.set)
    loop.start()
    assert not ran.wait(0.15)
    assert ran.wait(1.0)
    loop.stop()


def test_listed_errors_go_to_on_error_and_the_loop_goes_on() -> None:
    seen: list[str] = []
    calls = iter(range(100))

    def tick() -> None:
        if next(calls) % 2 == 0:
            raise ValueError("bad round")

    loop = Periodic("t", 0.02, tick, immediate=True, errors=(ValueError,),
                    on_error=lambda err: seen.append(str(err)))
    loop.start()
    time.sleep(0.2)
    loop.stop()
    assert len(seen) >= 2 and set(seen) == {"bad round"}
