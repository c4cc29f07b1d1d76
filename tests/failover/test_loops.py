"""The reconvergence loop's bookkeeping and the probes' isolate/give-back decisions.

The Reconverger runs against a recording stand-in for the FabricController here (its rewrites
against real switches are covered by test_failover_fabric.py)."""

from __future__ import annotations

import pytest

from controller.probes import Hysteresis, direction_bad, probe_frame
from controller.reconverge import Reconverger
from controller.sync import SyncReport
from topos import build_fabric


class RecordingController:
    def __init__(self):
        self.spec = build_fabric("leafspine")
        self.marks: list[tuple[str, int, bool]] = []
        self.programs = 0

    def mark_link(self, switch: str, port: int, *, up: bool) -> None:
        self.marks.append((switch, port, up))

    def program(self, *, push_pipeline: bool = True) -> list[SyncReport]:
        assert not push_pipeline
        self.programs += 1
        return [SyncReport("leaf0", modified=3)]


@pytest.fixture
def rc():
    ctl = RecordingController()
    loop = Reconverger(ctl, watch_ports=False).start()
    yield loop, ctl
    loop.stop()


def test_a_link_is_down_while_any_source_says_so(rc):
    loop, ctl = rc
    port = ctl.spec.port_to("leaf0", "spine1")
    loop.report("leaf0", port, up=False, source="port")
    assert loop.wait_idle(5)
    loop.report("leaf0", port, up=False, source="probe")
    loop.report("leaf0", port, up=True, source="port")  # the probe still says it drops
    assert loop.wait_idle(5)
    assert loop.down_links() == ["leaf0~spine1"]
    assert ctl.marks == [("leaf0", port, False)] and ctl.programs == 1
    loop.report("leaf0", port, up=True, source="probe")
    assert loop.wait_idle(5)
    assert loop.down_links() == []
    assert ctl.marks[-1] == ("leaf0", port, True) and ctl.programs == 2


def test_events_carry_their_times_and_both_ends_of_a_link_are_one_link(rc):
    loop, ctl = rc
    loop.report("leaf1", ctl.spec.port_to("leaf1", "spine0"), up=False)
    loop.report("spine0", ctl.spec.port_to("spine0", "leaf1"), up=False)
    assert loop.wait_idle(5)
    changed = [e for e in loop.events if e.rerouted is not None]
    assert len(changed) == 1 and ctl.programs == 1
    event = changed[0]
    assert event.link == "leaf1~spine0" and not event.up and event.writes == 3
    assert 0 <= event.reroute_s < 5 and "rerouted in" in str(event)
    assert "no route change" in str(loop.events[-1])


def test_an_unknown_port_is_refused(rc):
    loop, _ = rc
    with pytest.raises(KeyError, match="no link on port 99"):
        loop.report("leaf0", 99, up=False)


def test_isolation_needs_bad_rounds_in_a_row_and_give_back_good_rounds():
    h = Hysteresis(bad_rounds=2, good_rounds=3)
    assert [h.judge("x", bad) for bad in (True, False, True)] == [None, None, None]
    assert h.judge("x", True) is True  # second bad round in a row
    assert h.judge("x", True) is None  # already isolated
    assert [h.judge("x", False) for _ in range(3)] == [None, None, False]
    assert h.isolated == set()
    with pytest.raises(ValueError):
        Hysteresis(0, 1)


def test_an_isolated_link_still_dropping_stays_isolated():
    """Isolated, a link carries only the probes (5 a round): at 30% drop it never loses
    `min_lost` of them, yet it must not be given back while it loses any."""
    judge = {"threshold": 0.1, "min_lost": 5}
    assert not direction_bad(2, 10, 3, isolated=False, **judge)  # in use: 2 of 5 is noise
    assert direction_bad(6, 40, 10, isolated=False, **judge)
    assert direction_bad(2, 10, 3, isolated=True, **judge)  # isolated: any loss is bad
    assert not direction_bad(0, 10, 0, isolated=True, **judge)
    assert not direction_bad(1, 10, 0, isolated=True, **judge)  # late, arrived next round


def test_probe_frames_are_minimum_size_and_addressed_to_the_far_end():
    frame = probe_frame("02:53:00:01:00:03", "02:53:00:09:00:01", 7)
    assert len(frame) == 60
    assert frame[:6] == bytes.fromhex("025300090001") and frame[12:14] == b"\x88\xb5"
