"""Go-back-N (RoCEv2 RC reliability) over real veth links, with the impairment relay dropping
or reordering chosen PSNs on their first transmission."""

from __future__ import annotations

import pytest
from traffic_helpers import relay

pytestmark = pytest.mark.root

PKT = 1024


def one_message(dst_ip: str, qpn: int, packets: int, **extra) -> list[dict]:
    return [{"dst_ip": dst_ip, "qpn": qpn, "rate_bps": 4e6, "message_bytes": packets * PKT,
             "messages": 1, **extra}]


def test_a_dropped_psn_is_resent_and_the_message_completes(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    with relay(relayed_net, drop="7,30") as counts:
        sent, got = run_flow(a, b, one_message(b.ip, 81, 60), recv={"record_delivery": True})
    assert counts["dropped"] == 2
    q, r = sent["qps"][0], got["qps"][0]
    # The receiver NAKed each gap once; the sender went back to 7, then to 30.
    assert r["naks_sent"] == 2 and q["naks"] == 2
    assert r["seq_errors"] > 0  # packets after each gap were refused until the resend
    assert q["retransmitted_packets"] > 0
    assert q["retransmitted_bytes"] > q["retransmitted_packets"] * PKT
    assert q["packets"] == 60 + q["retransmitted_packets"]
    assert q["acked_packets"] == 60 and not q["gave_up"]
    assert r["delivered_seqs"] == list(range(60))
    assert r["bytes"] == 60 * PKT and r["lost"] == 0
    assert r["messages_complete"] == 1


def test_a_lost_tail_is_resent_after_the_retransmission_timeout(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    with relay(relayed_net, drop="19") as counts:  # the last packet: no later PSN shows the gap
        sent, got = run_flow(a, b, one_message(b.ip, 82, 20), send={"rto_s": 0.2})
    assert counts["dropped"] == 1
    q, r = sent["qps"][0], got["qps"][0]
    assert q["timeouts"] >= 1 and q["naks"] == 0
    assert q["retransmitted_packets"] >= 1
    assert q["acked_packets"] == 20
    assert r["messages_complete"] == 1 and r["bytes"] == 20 * PKT


def test_without_go_back_n_a_drop_leaves_the_message_incomplete(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    off = {"go_back_n": False}
    with relay(relayed_net, drop="7"):
        sent, got = run_flow(a, b, one_message(b.ip, 83, 30), send=off, recv=off)
    q, r = sent["qps"][0], got["qps"][0]
    assert q["retransmitted_packets"] == 0 and r["naks_sent"] == 0
    assert r["lost"] == 1 and r["messages_complete"] == 0


def test_a_reordered_untagged_flow_draws_naks_and_resends(relayed_net, run_flow):
    """Reordering without reorder tags looks like loss to an RC receiver: NAK, go back."""
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    with relay(relayed_net, hold="5:2,25:3") as counts:
        sent, got = run_flow(a, b, one_message(b.ip, 84, 40))
    assert counts["held"] == 2 and counts["dropped"] == 0  # nothing was lost on the wire
    q, r = sent["qps"][0], got["qps"][0]
    assert r["naks_sent"] >= 2 and q["naks"] >= 2
    assert q["retransmitted_packets"] >= 2
    assert r["messages_complete"] == 1 and r["bytes"] == 40 * PKT


def test_a_reordered_tagged_flow_is_reordered_without_naks(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    with relay(relayed_net, hold="5:2,25:3") as counts:
        sent, got = run_flow(a, b, one_message(b.ip, 85, 40, tag=True),
                             recv={"record_delivery": True})
    assert counts["held"] == 2
    q, r = sent["qps"][0], got["qps"][0]
    assert r["naks_sent"] == 0 and q["retransmitted_packets"] == 0
    assert r["out_of_order"] == 2
    assert r["delivered_seqs"] == list(range(40))
    assert r["messages_complete"] == 1


def test_a_tagged_flow_recovers_a_real_loss_after_the_reorder_timeout(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    with relay(relayed_net, drop="10"):
        sent, got = run_flow(a, b, one_message(b.ip, 86, 40, tag=True),
                             recv={"record_delivery": True, "reorder_timeout_s": 0.05})
    q, r = sent["qps"][0], got["qps"][0]
    assert r["naks_sent"] >= 1 and q["naks"] >= 1
    assert r["delivered_seqs"] == list(range(40))
    assert r["messages_complete"] == 1 and r["lost"] == 0


SELECTIVE = {"selective": True}


def test_selective_retransmission_resends_only_the_lost_psns(relayed_net, run_flow):
    """Ultra Ethernet's and IRN's recovery: the receiver places what comes after a gap and
    NAKs the lost PSNs themselves; the sender resends those two and nothing else."""
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    with relay(relayed_net, drop="7,30") as counts:
        sent, got = run_flow(a, b, one_message(b.ip, 87, 60), send=SELECTIVE,
                             recv={**SELECTIVE, "record_delivery": True})
    assert counts["dropped"] == 2
    q, r = sent["qps"][0], got["qps"][0]
    assert r["naks_sent"] == 2 and q["naks"] == 2
    assert r["seq_errors"] == 0  # nothing refused: the packets after each gap were placed
    assert q["retransmitted_packets"] == 2 and q["packets"] == 62
    assert q["acked_packets"] == 60 and not q["gave_up"]
    assert r["delivered_seqs"] == list(range(60))  # released in order all the same
    assert r["messages_complete"] == 1 and r["lost"] == 0


def test_selective_retransmission_recovers_a_burst_and_a_lost_tail(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    with relay(relayed_net, drop="10,11,12,39") as counts:  # 39: the last, found by the timer
        sent, got = run_flow(a, b, one_message(b.ip, 88, 40), send={**SELECTIVE, "rto_s": 0.2},
                             recv=SELECTIVE)
    assert counts["dropped"] == 4
    q, r = sent["qps"][0], got["qps"][0]
    assert r["naks_sent"] == 3 and q["timeouts"] == 1  # the tail: one expiry, not one per PSN
    # 10-12 once each on their NAKs; the timer resends una = 32 (ACKs come every 16 packets:
    # the last was 31's), whose ACK (38) is partial and resends 39 at once
    assert q["retransmitted_packets"] == 5
    assert q["acked_packets"] == 40 and r["messages_complete"] == 1 and r["bytes"] == 40 * PKT
