"""p4switch's PFC watchdog (p4switch/switch/pfc_watchdog.py) in its traffic manager, on a clock
the test moves: stuck = paused, non-empty, nothing sent for the detection time."""

from __future__ import annotations

import pytest

from p4switch.switch.pfc import PfcReceiver
from p4switch.switch.pfc_watchdog import WatchdogConfig
from p4switch.switch.runtime_server import CommandError, SwitchCommands
from p4switch.switch.tm import TrafficManager
from traffic.pfc import build_pause

PORT, PRIO = 2, 3


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _tm(action: str = "drop") -> tuple[TrafficManager, Clock]:
    clock = Clock()
    tm = TrafficManager(8, clock=clock)
    tm.set_watchdog(WatchdogConfig(0.2, 0.4, action, poll_s=0.05))
    return tm, clock


def _run(tm: TrafficManager, clock: Clock, until: float, step: float = 0.01) -> list:
    out = []
    while clock.t < until - 1e-9:
        clock.t += step
        out += tm.dequeue_due(clock.t)
    return out


def test_a_paused_full_queue_is_declared_stuck_drained_and_restored() -> None:
    tm, clock = _tm("drop")
    for i in range(10):
        assert tm.enqueue(PORT, PRIO, i, clock.t) is not None
    tm.pause(PORT, PRIO, 10.0)
    paused_at = clock.t
    assert _run(tm, clock, paused_at + 0.15) == []
    assert not tm.queues(PORT)[PRIO].stuck  # not yet: less than the detection time
    _run(tm, clock, paused_at + 0.3)
    (stuck,) = tm.watchdog.events
    assert stuck.kind == "stuck" and (stuck.port, stuck.priority) == (PORT, PRIO)
    assert 0.2 <= stuck.t - paused_at <= 0.2 + 0.05 + 0.011  # detection + one poll
    assert stuck.dropped == 10 and tm.depth(PORT, PRIO) == 0
    # while stuck: pauses are ignored and arrivals dropped
    tm.pause(PORT, PRIO, 10.0)
    last_pause = clock.t
    assert not tm.is_paused(PORT, PRIO)
    assert tm.enqueue(PORT, PRIO, "x", clock.t) is None
    assert tm.stats(PORT, PRIO).watchdog_drops == 11
    # restored restoration time after the last pause; lossless again
    _run(tm, clock, last_pause + 0.35)
    assert tm.enqueue(PORT, PRIO, "y", clock.t) is None  # still stuck
    clock.t = last_pause + 0.41
    assert tm.enqueue(PORT, PRIO, "z", clock.t) is not None
    assert [e.kind for e in tm.watchdog.events] == ["stuck", "restored"]
    assert tm.watchdog.events[1].t == pytest.approx(last_pause + 0.4)
    assert tm.watchdog.events[1].dropped == 12
    tm.pause(PORT, PRIO, 1.0)
    assert tm.is_paused(PORT, PRIO)  # pauses obeyed again


def test_forward_ignores_the_pause_and_sends_what_is_queued() -> None:
    tm, clock = _tm("forward")
    for i in range(5):
        tm.enqueue(PORT, PRIO, i, clock.t)
    tm.pause(PORT, PRIO, 10.0)
    sent = _run(tm, clock, clock.t + 0.3)
    assert [item for _p, _q, item, *_ in sent] == [0, 1, 2, 3, 4]
    assert tm.watchdog.events[0].kind == "stuck" and tm.watchdog.events[0].dropped == 0
    assert tm.stats(PORT, PRIO).watchdog_drops == 0


def test_a_queue_that_keeps_sending_while_paused_often_is_not_stuck() -> None:
    """Healthy congestion: 30 ms pauses, the queue sends between them."""
    tm, clock = _tm("drop")
    for i in range(200):
        tm.enqueue(PORT, PRIO, i, clock.t)
    tm.set_queue_rate(100, PORT, PRIO)
    start = clock.t
    while clock.t < start + 2.0:
        tm.pause(PORT, PRIO, 0.03)
        _run(tm, clock, clock.t + 0.05)
    assert tm.watchdog.events == []
    assert tm.stats(PORT, PRIO).dequeued > 0


def test_an_empty_paused_queue_is_not_stuck_and_off_clears_it() -> None:
    tm, clock = _tm("drop")
    tm.enqueue(1, PRIO, "other", clock.t)  # keeps the data path polling
    tm.pause(1, PRIO, 10.0)
    tm.pause(PORT, PRIO, 10.0)
    _run(tm, clock, clock.t + 0.5)
    assert [(e.port, e.kind) for e in tm.watchdog.events] == [(1, "stuck")]
    tm.set_watchdog(None)
    assert not tm.queues(1)[PRIO].stuck


def test_a_pause_for_a_stuck_queue_stops_at_the_port() -> None:
    """The pipeline never sees a pause every queue of which is stuck: the program relays pauses
    upstream (p4src/include/pfc.p4), and in a broken cycle such relays would go round the ring
    and keep every stuck queue from being restored. An XON, or a pause that also reaches a
    queue that is not stuck, goes on into the pipeline."""
    tm, clock = _tm("drop")
    rx = PfcReceiver(tm.pause, 8, lambda _port: 1e6)
    pause, xon = build_pause("02:00:00:00:00:01", {PRIO: 0xFFFF}), build_pause(
        "02:00:00:00:00:01", {PRIO: 0})
    tm.enqueue(PORT, PRIO, "held", clock.t)
    assert rx.handle(PORT, pause) is True and tm.is_paused(PORT, PRIO)
    _run(tm, clock, clock.t + 0.3)
    assert tm.queues(PORT)[PRIO].stuck
    assert rx.handle(PORT, pause) is False and rx.ignored == 1
    assert rx.handle(PORT, build_pause("02:00:00:00:00:01", {PRIO: 0xFFFF, 1: 0xFFFF})) is True
    assert tm.is_paused(PORT, 1) and not tm.is_paused(PORT, PRIO)
    assert rx.handle(PORT, xon) is True and rx.ignored == 1
    assert rx.handle(PORT, b"\x00" * 60) is None and rx.frames == 4
    # the last ignored pause still counts: restored restoration time after it, then obeyed
    clock.t += 0.41
    assert rx.handle(PORT, pause) is True and tm.is_paused(PORT, PRIO)
    assert [e.kind for e in tm.watchdog.events] == ["stuck", "restored"]


def test_runtime_cli_knob() -> None:
    tm, clock = _tm()
    cmds = SwitchCommands(tm, {1: "veth1"}, lambda _p: True, lambda: 0)
    assert cmds.execute(["pfc_watchdog", "300", "1000", "forward"]) == ""
    assert tm.watchdog is not None and tm.watchdog.config.action == "forward"
    assert cmds.execute(["pfc_watchdog_stats"]).startswith(
        "watchdog detection_ms 300 restoration_ms 1000 action forward")
    with pytest.raises(CommandError, match="restoration time must be > 0.*action must be one of drop, forward"):
        cmds.execute(["pfc_watchdog", "300", "0", "ignore"])
    with pytest.raises(CommandError, match="usage"):
        cmds.execute(["pfc_watchdog", "300"])
    assert cmds.execute(["pfc_watchdog", "off"]) == ""
    assert cmds.execute(["pfc_watchdog_stats"]) == "watchdog off"


def test_controller_watchdog_with_backlog_uses_sonic_semantics() -> None:
    """controller/pfc_agent.py's PfcWatchdog over a traffic manager's state: a long pause of a
    queue that keeps sending, or of an empty one, is no storm; a frozen backlog is."""
    from controller.pfc_agent import PfcWatchdog

    clock = Clock()
    tm = TrafficManager(8, clock=clock)
    tm.set_queue_rate(100, PORT, PRIO)
    depths: list[int] = []
    dog = PfcWatchdog([("s", PORT, PRIO)],
                      lambda _s, port, prio: tm.is_paused(port, prio),
                      lambda _s, port, prio, depth: depths.append(depth),
                      backlog=lambda _s, port, prio: (tm.depth(port, prio),
                                                      tm.stats(port, prio).dequeued),
                      storm_s=0.2, restore_s=0.2, clock=clock)
    tm.pause(PORT, PRIO, 1.0)  # paused and empty
    for _ in range(5):
        clock.t += 0.1
        dog.poll()
    assert dog.events == []
    for i in range(50):
        tm.enqueue(PORT, PRIO, i, clock.t)
    for _ in range(10):  # paused most of the time, but 20 ms gaps let a packet out
        tm.pause(PORT, PRIO, 0.08)
        _run(tm, clock, clock.t + 0.1)
        dog.poll()
    assert dog.events == []
    tm.pause(PORT, PRIO, 5.0)  # frozen with a backlog
    for _ in range(4):
        clock.t += 0.1
        dog.poll()
    assert [e.kind for e in dog.events] == ["storm"] and depths == [0]


class _Sm:
    def __init__(self, ingress_port: int) -> None:
        self.ingress_port = ingress_port


class _Item:  # what the traffic manager queues: only the ingress port matters here
    def __init__(self, ingress_port: int) -> None:
        self.sm = _Sm(ingress_port)


def _pfc_frame(prio: int, quanta: int) -> bytes:
    import struct

    times = [0] * 8
    times[prio] = quanta
    return (bytes.fromhex("0180c2000001") + bytes(6) + b"\x88\x08\x01\x01"
            + struct.pack("!H8H", 1 << prio, *times)).ljust(60, b"\0")


def test_pause_hold_refreshes_while_the_queue_holding_that_ports_traffic_is_deep() -> None:
    from p4switch.switch.pfc import PauseHold

    clock = Clock()
    tm = TrafficManager(8, clock=clock)
    hold = PauseHold(tm.held_depth, lambda _port: 20e6)  # 4000 quanta: 102.4 ms
    hold.set_threshold(4)
    upstream = 5
    for _ in range(10):
        tm.enqueue(PORT, PRIO, _Item(upstream), clock.t)
    tm.pause(PORT, PRIO, 10.0)
    hold.on_transmit(upstream, _pfc_frame(PRIO, 4000), clock.t)
    assert hold.due(clock.t) == []
    clock.t += 0.026  # a quarter of the pause time
    assert hold.due(clock.t) == [(upstream, _pfc_frame(PRIO, 4000))]
    assert hold.held(upstream, PRIO) == 10 and hold.held(upstream + 1, PRIO) == 0
    tm.resume(PORT, PRIO)
    tm.dequeue_due(clock.t)  # drained: the hold lets the last pause run out
    clock.t += 0.026
    assert hold.due(clock.t) == [] and hold.next_due() is None
    hold.on_transmit(upstream, _pfc_frame(PRIO, 4000), clock.t)
    hold.on_transmit(upstream, _pfc_frame(PRIO, 0), clock.t)  # XON ends it at once
    assert hold.next_due() is None and hold.refreshed == 1
