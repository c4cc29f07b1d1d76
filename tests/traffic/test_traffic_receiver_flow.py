"""Per-QP receive state (`traffic.receiver_flow`): PSN tracking and message assembly, the steps
the receiver runs for every data packet after decoding it."""

from __future__ import annotations

from traffic.headers import SEND_FIRST, SEND_LAST, SEND_MIDDLE, SEND_ONLY
from traffic.receiver_config import ReceiverConfig
from traffic.receiver_flow import MISSING_TRACK_LIMIT, FlowState
from traffic.results import Bin, QPRecvResult


def _flow(want: int | None = None) -> FlowState:
    cfg = ReceiverConfig(iface="x", duration_s=1, record_delivery=True)
    return FlowState((b"\x0a\x00\x00\x01", 7), QPRecvResult(src_ip="10.0.0.1", qpn=7), cfg, want)


def test_track_psn_gaps_out_of_order_and_duplicates():
    flow, binr = _flow(), Bin()
    assert [flow.track_psn(binr, p) for p in (0, 1, 4)] == [0, 0, 2]
    assert flow.missing == {2, 3} and flow.highest == 4
    assert flow.track_psn(binr, 2) == 0  # fills a hole: out of order by 2
    assert flow.track_psn(binr, 2) == -1  # now a duplicate
    assert flow.track_psn(binr, 1) == -1
    assert flow.missing == {3}
    assert (flow.res.out_of_order, binr.out_of_order, flow.res.reorder_distance_sum,
            flow.res.reorder_distance_max) == (1, 1, 2, 2)


def test_track_psn_counts_huge_jumps_without_tracking_them():
    flow, binr = _flow(), Bin()
    flow.track_psn(binr, 0)
    assert flow.track_psn(binr, MISSING_TRACK_LIMIT + 10) == MISSING_TRACK_LIMIT + 9
    assert flow.untracked == 9 and len(flow.missing) == MISSING_TRACK_LIMIT


def test_assemble_messages_fct_and_completion():
    flow = _flow(want=3000)
    stamp_ns = 1_000_000_000_000
    done = flow.assemble([(0, SEND_FIRST, 1000, stamp_ns), (1, SEND_MIDDLE, 1000, 0)], 1000.5)
    assert not done and flow.msg is not None and flow.res.messages == []
    assert flow.assemble([(2, SEND_LAST, 1000, 0)], 1000.75)
    assert len(flow.res.messages) == 1
    msg = flow.res.messages[0]
    assert (msg.psn, msg.bytes, msg.complete, msg.fct_s) == (0, 3000, True, 0.75)
    # a message whose first packet never came, then one with a hole: both incomplete
    flow.assemble([(4, SEND_LAST, 10, 0), (5, SEND_FIRST, 10, 1), (7, SEND_LAST, 10, 0),
                   (8, SEND_ONLY, 10, stamp_ns)], 1001.0)
    assert [(m.psn, m.bytes, m.complete) for m in flow.res.messages[1:]] == [
        (4, 10, False), (5, 20, False), (8, 10, True)]
    assert flow.res.messages[-1].fct_s == 1.0 and flow.delivered_seqs == [0, 1, 2, 4, 5, 7, 8]
