"""Unit behaviour of DCQCN, PFC pause state and the reorder buffer (pure logic, injected time)."""

from __future__ import annotations

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.l2 import Ether

from traffic.dcqcn import Dcqcn, DcqcnParams
from traffic.pfc import PauseState, build_pause, parse_pause, pause_seconds
from traffic.reorder import ReorderBuffer

# --- DCQCN -------------------------------------------------------------------------------


def test_dcqcn_first_cnp_halves_then_recovers_to_line_rate():
    p = DcqcnParams.scaled(10e6)
    dc = Dcqcn(p, 10e6, now=1.0)
    assert dc.on_cnp(1.0)
    assert dc.current == pytest.approx(5e6)  # alpha starts at 1: cut by half
    assert dc.target == pytest.approx(10e6)
    assert dc.alpha == pytest.approx(1.0)  # (1-g)*1 + g
    # Fast recovery: each rate-increase period halves the distance to the target.
    assert dc.update(1.0 + p.rate_increase_s + 1e-9) == pytest.approx(7.5e6)
    assert dc.update(1.0 + 2 * p.rate_increase_s + 1e-9) == pytest.approx(8.75e6)
    assert dc.update(1.0 + 60 * p.rate_increase_s) == pytest.approx(10e6)


def test_dcqcn_rate_decrease_interval_and_min_rate():
    p = DcqcnParams.scaled(10e6)
    dc = Dcqcn(p, 10e6)
    assert dc.on_cnp(0.0)
    assert not dc.on_cnp(p.rate_decrease_interval_s / 2)  # too soon: counted, no cut
    assert dc.cnps == 2 and dc.cuts == 1
    t = 0.0
    for _ in range(200):
        t += p.rate_decrease_interval_s
        dc.on_cnp(t)
    assert dc.current == pytest.approx(p.min_rate_bps)


def test_dcqcn_alpha_decays_without_cnps():
    p = DcqcnParams.scaled(10e6)
    dc = Dcqcn(p, 10e6)
    dc.update(3 * p.alpha_update_s + 1e-9)
    assert dc.alpha == pytest.approx((1 - p.g) ** 3)
    dc.on_cnp(3 * p.alpha_update_s + 2e-9)
    assert dc.alpha == pytest.approx((1 - p.g) ** 4 + p.g)
    assert dc.current == pytest.approx(10e6 * (1 - (1 - p.g) ** 3 / 2))


def test_dcqcn_scaled_parameters_follow_the_scaling_rules():
    p = DcqcnParams.scaled(100e6)
    assert 0.030 <= p.alpha_update_s <= 0.050
    assert 0.150 <= p.rate_increase_s <= 0.300
    assert 0.002 <= p.rate_decrease_interval_s <= 0.004
    assert 0.005 * 100e6 <= p.additive_bps <= 0.01 * 100e6
    with pytest.raises(ValueError, match="line rate"):
        DcqcnParams.scaled(0)


# --- PFC ---------------------------------------------------------------------------------


def test_pause_time_in_quanta():
    assert pause_seconds(0xFFFF, 100e6) == pytest.approx(0.3355, rel=1e-3)
    assert pause_seconds(0xFFFF, 10e6) == pytest.approx(3.355, rel=1e-3)
    assert pause_seconds(0xFFFF, 100e9) == pytest.approx(335e-6, rel=2e-3)


def test_pause_frame_round_trip_and_scapy_decoding():
    frame = build_pause("02:00:00:00:00:09", {3: 1000, 6: 0})
    assert len(frame) == 60
    assert parse_pause(frame) == {3: 1000, 6: 0}
    p = Ether(frame)
    assert p.dst == "01:80:c2:00:00:01" and p.type == 0x8808
    ctl = p[MACControlClassBasedFlowControl]
    assert (ctl.c3_enabled, ctl.c3_pause_time, ctl.c6_enabled, ctl.c0_enabled) == (1, 1000, 1, 0)
    assert parse_pause(bytes(Ether() / (b"x" * 60))) is None
    with pytest.raises(ValueError, match="priority"):
        build_pause("02:00:00:00:00:09", {8: 1})


def test_pause_state_pause_refresh_and_resume():
    st = PauseState(10e6)
    st.on_frame(build_pause("02:00:00:00:00:09", {3: 0xFFFF}), now=1.0)
    assert st.is_paused(3, 1.0) and not st.is_paused(2, 1.0)
    assert st.resume_at(3) == pytest.approx(1.0 + 0xFFFF * 512 / 10e6)
    st.on_frame(build_pause("02:00:00:00:00:09", {3: 0}), now=1.5)  # XON
    assert not st.is_paused(3, 1.5)
    assert st.paused_s[3] == pytest.approx(0.5)
    assert st.frames == 2


# --- reorder buffer ----------------------------------------------------------------------


def test_reorder_buffer_restores_order():
    rb = ReorderBuffer(0, capacity=16, timeout_s=1.0)
    out = []
    for seq in [0, 2, 3, 1, 5, 4, 6]:
        out += rb.push(seq, seq, now=0.0)
    assert out == [0, 1, 2, 3, 4, 5, 6]
    assert rb.max_occupancy == 2 and rb.occupancy == 0 and rb.skipped == 0


def test_reorder_buffer_gives_up_on_a_hole_after_the_timeout():
    rb = ReorderBuffer(0, capacity=16, timeout_s=0.1)
    assert rb.push(0, "a", 0.0) == ["a"]
    assert rb.push(2, "c", 0.0) == []  # 1 is missing
    assert rb.push(3, "d", 0.05) == []
    assert rb.expire(0.09) == []
    assert rb.expire(0.11) == ["c", "d"]
    assert rb.skipped == 1
    assert rb.push(1, "b", 0.2) == []  # too late: already given up on
    assert rb.late == 1


def test_reorder_buffer_skips_when_full():
    rb = ReorderBuffer(0, capacity=3, timeout_s=10)
    assert rb.push(1, 1, 0) == [] and rb.push(2, 2, 0) == []
    assert rb.push(3, 3, 0) == [1, 2, 3]
    assert rb.skipped == 1
    assert rb.push(2, 2, 0) == [] and rb.late == 1  # duplicate behind the release point


# --- configuration errors ----------------------------------------------------------------


def test_sender_config_reports_every_problem_at_once():
    from traffic.sender import QueuePairConfig, SenderConfig

    cfg = SenderConfig(iface="x", dscp=70, priority=9, qps=[
        QueuePairConfig(dst_ip="10.0.0.300", qpn=0, rate_bps=-1, message_bytes=4, verb="read"),
        QueuePairConfig(dst_ip="10.0.0.2", qpn=5, messages=None),
    ])
    problems = "\n".join(cfg.problems())
    for text in ("QPN must be 1..16777215", "rate must be > 0", "message size must be >= 8",
                 "verb must be one of", "'10.0.0.300' is not an IPv4 address", "DSCP must be",
                 "priority must be 0..7", "needs a duration"):
        assert text in problems


def test_receiver_config_needs_an_end():
    from traffic.receiver import ReceiverConfig

    assert "nothing ends the run" in " ".join(
        ReceiverConfig(iface="x", idle_timeout_s=None).problems())
    assert ReceiverConfig(iface="x").problems() == []


def test_reorder_buffer_release_all_treats_holes_as_not_real():
    rb = ReorderBuffer(0, capacity=16, timeout_s=10)
    assert rb.push(1000, "a", 0) == [] and rb.push(1002, "c", 0) == []
    assert rb.release_all() == ["a", "c"]
    assert rb.next_seq == 1003 and rb.skipped == 0 and rb.occupancy == 0
    assert rb.push(1003, "d", 0) == ["d"]


def test_icrc_checker_on_plain_tagged_and_corrupted_frames():
    from traffic.frames import Endpoints, IcrcChecker, add_tag, build_frame

    ep = Endpoints("02:00:00:00:00:01", "02:00:00:00:00:02", "10.1.0.1", "10.1.0.2", 5, 9)
    check = IcrcChecker()
    for psn in range(3):  # same headers: the cached head CRC is reused
        frame = build_frame(ep, 0x07, psn, bytes([psn]) * 100)
        assert check.ok(frame) and check.ok(add_tag(frame, 1, psn))
        bad = bytearray(frame)
        bad[60] ^= 1
        assert not check.ok(bad)
