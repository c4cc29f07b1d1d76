"""HPCC's sender algorithm (traffic.hpcc) on hand-made INT record sequences. Every expected
value is worked out here from Algorithm 1 of the paper (Li et al., SIGCOMM 2019), with numbers
chosen so the arithmetic is easy to follow: B_NIC = 80 Mb/s = 10 MB/s, T = 1 ms, so
W_init = 10 000 B; eta = 0.95, maxStage = 5, W_AI = 100 B, one queued packet = 1000 B."""

from __future__ import annotations

import pytest

from traffic.hpcc import Hpcc, HpccParams
from traffic.inband import HopRecord

P = HpccParams(line_rate_bps=80e6, base_rtt_s=0.001, eta=0.95, max_stage=5, w_ai_bytes=100,
               packet_bytes=1000)


def hop(qdepth: int, ts_us: int, tx_bytes: int, mbps: int = 80, switch: int = 1,
        port: int = 2) -> HopRecord:
    return HopRecord(switch_id=switch, ingress_port=1, egress_port=port, qdepth=qdepth,
                     egress_ts=ts_us, hop_latency=0, tx_bytes=tx_bytes, link_mbps=mbps)


def test_first_ack_only_records_then_a_congested_link_cuts_the_window() -> None:
    cc = Hpcc(P)
    assert cc.window == 10_000 and cc.rate_bps == pytest.approx(80e6)
    assert cc.on_ack(seq=0, snd_nxt=10, hops=[hop(4, 1000, 0)]) == 10_000  # nothing to compare
    assert cc.last_update_seq == 10
    # 0.5 ms later 5000 B more left: txRate = 10 MB/s = B; qlen = min(6, 4) x 1000 B
    # u' = 4000 / (10e6 x 0.001) + 1 = 1.4; tau = 0.5 ms: U = 0.5 x 1 + 0.5 x 1.4 = 1.2
    # seq 11 > lastUpdateSeq 10: a new RTT, U >= eta: W = Wc / (U / eta) + W_AI, Wc = W
    w = cc.on_ack(seq=11, snd_nxt=12, hops=[hop(6, 1500, 5000)])
    want = 10_000 / (1.2 / 0.95) + 100
    assert cc.u == pytest.approx(1.2)
    assert w == pytest.approx(want) and cc.wc == pytest.approx(want)
    assert cc.rate_bps == pytest.approx(want * 8 / 0.001)  # R = W / T
    assert cc.last_update_seq == 12 and cc.inc_stage == 0


def test_within_an_rtt_the_window_moves_but_the_reference_does_not() -> None:
    cc = Hpcc(P)
    cc.on_ack(0, 10, [hop(4, 1000, 0)])
    cc.on_ack(11, 12, [hop(6, 1500, 5000)])
    wc = 10_000 / (1.2 / 0.95) + 100
    # 1 ms, 2500 B, empty queue: u' = 0.25, tau = T: U = 0.25 < eta, stage 0 < 5
    # seq 12 is not > lastUpdateSeq 12: W = Wc + W_AI, Wc and the stage unchanged
    assert cc.on_ack(12, 13, [hop(0, 2500, 7500)]) == pytest.approx(wc + 100)
    assert cc.u == pytest.approx(0.25)
    assert cc.wc == pytest.approx(wc) and cc.inc_stage == 0 and cc.last_update_seq == 12


def test_additive_stages_then_a_multiplicative_step_after_max_stage() -> None:
    cc = Hpcc(P)
    cc.on_ack(0, 10, [hop(4, 1000, 0)])
    cc.on_ack(11, 12, [hop(6, 1500, 5000)])
    wc = 10_000 / (1.2 / 0.95) + 100
    ts, tx, seq = 1500, 5000, 12
    for stage in range(1, 6):  # five RTTs at U = 0.25: Wc grows by W_AI each time
        ts, tx, seq = ts + 1000, tx + 2500, seq + 1
        cc.on_ack(seq, seq, [hop(0, ts, tx)])
        wc += 100
        assert cc.inc_stage == stage and cc.wc == pytest.approx(wc)
    # incStage = maxStage: W = Wc / (0.25 / 0.95) + W_AI = 34 860 B, bounded by W_init
    cc.on_ack(seq + 1, seq + 1, [hop(0, ts + 1000, tx + 2500)])
    assert wc / (0.25 / 0.95) + 100 > 10_000
    assert cc.window == 10_000 and cc.wc == 10_000 and cc.inc_stage == 0


def test_the_most_loaded_link_decides_and_its_interval_weighs_the_average() -> None:
    cc = Hpcc(P)
    first = [hop(0, 1000, 0, switch=1), hop(2, 5000, 0, mbps=40, switch=2)]
    cc.on_ack(0, 10, first)
    # switch 1: 0.2 ms, 1000 B at 10 MB/s: u' = 0.5 (empty queue)
    # switch 2 (5 MB/s): 0.4 ms, 2000 B: txRate/B = 1; qlen min(3, 2) = 2000 B / (5e6 x 1e-3)
    #   = 0.4: u' = 1.4, tau = 0.4 ms: U = 0.6 x 1 + 0.4 x 1.4 = 1.16
    cc.on_ack(0, 10, [hop(0, 1200, 1000, switch=1), hop(3, 5400, 2000, mbps=40, switch=2)])
    assert cc.u == pytest.approx(0.6 + 0.4 * 1.4)
    assert cc.window == pytest.approx(10_000 / (1.16 / 0.95) + 100)


def test_tx_bytes_wrap_unknown_rates_and_tau_capped_at_t() -> None:
    cc = Hpcc(P)
    cc.on_ack(0, 10, [hop(0, 1000, 0, mbps=0, switch=1), hop(0, 0, 2**32 - 1000, switch=2)])
    # switch 1 has no rate (0): skipped, whatever it says. Switch 2: tx_bytes wrapped,
    # 2**32 - 1000 -> 4000 is 5000 B in 2 ms (tau = 2 T, capped at T: U = u')
    # u' = 5000 / 2e-3 / 10e6 = 0.25
    cc.on_ack(0, 10, [hop(60, 1001, 10**9, mbps=0, switch=1), hop(0, 2000, 4000, switch=2)])
    assert cc.u == pytest.approx(0.25)
    assert cc.window == pytest.approx(10_000)  # U < eta: Wc + W_AI, bounded by W_init


def test_a_changed_path_or_no_time_passed_leaves_the_state_alone() -> None:
    cc = Hpcc(P)
    cc.on_ack(0, 10, [hop(0, 1000, 0, switch=1)])
    assert cc.on_ack(11, 12, [hop(50, 1500, 5000, switch=7)]) == 10_000  # another switch
    assert cc.on_ack(11, 12, [hop(50, 1500, 9000, switch=7)]) == 10_000  # same ts: no rate
    assert (cc.u, cc.updates, cc.last_update_seq) == (1.0, 0, 10)


def test_the_window_never_falls_below_one_packet() -> None:
    cc = Hpcc(P)
    cc.on_ack(0, 1, [hop(60000, 1000, 0)])
    for i in range(1, 30):  # a standing queue of 60 000 packets: U ~ 6000
        cc.on_ack(i + 1, i + 2, [hop(60000, 1000 + 1000 * i, 10_000 * i)])
    assert cc.window == P.packet_bytes


def test_scaled_parameters_follow_the_paper_sizing() -> None:
    p = HpccParams.scaled(20e6, 0.005, packet_bytes=1158, flows=16)
    assert p.w_init_bytes == pytest.approx(20e6 / 8 * 0.005)  # B_NIC x T = 12 500 B
    assert p.w_ai_bytes == pytest.approx(12_500 * 0.05 / 16)  # W_init (1 - eta) / N
    assert (p.eta, p.max_stage, p.packet_bytes) == (0.95, 5, 1158)
    with pytest.raises(ValueError, match="eta"):
        Hpcc(HpccParams(1e6, 0.001, eta=0))
