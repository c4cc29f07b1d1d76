"""Sender and receiver over real veth links between namespaces, with a deterministic impairment
relay where loss, reordering, ECN marks or corruption must be injected (this kernel has no
netem)."""

from __future__ import annotations

import math
import subprocess

import pytest
from traffic_helpers import relay

from traffic.agent import Agent, AgentError
from traffic.dcqcn import DcqcnParams
from traffic.hosts import NetnsHost, python_argv
from traffic.receiver import ExpectedFlow, ReceiverConfig
from traffic.results import SendResult
from traffic.sender import QueuePairConfig, SenderConfig

pytestmark = pytest.mark.root

# Unreliable (UC-like) transfer: every PSN sent once, so losses and reordering are counted as
# they happened on the wire instead of being repaired by go-back-N.
UC = {"go_back_n": False}


def test_bytes_sent_equal_bytes_received_without_loss(pair_net, run_flow):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    qps = [
        {"dst_ip": b.ip, "qpn": 11, "rate_bps": 8e6, "message_bytes": 65536, "messages": 8},
        {"dst_ip": b.ip, "qpn": 12, "rate_bps": 8e6, "message_bytes": 3000, "messages": 50,
         "verb": "send"},
        {"dst_ip": b.ip, "qpn": 13, "rate_bps": 4e6, "message_bytes": 100, "messages": 100},
    ]
    sent, got = run_flow(a, b, qps)
    assert not sent["partial"]
    by_qpn = {q["qpn"]: q for q in got["qps"]}
    assert set(by_qpn) == {11, 12, 13}
    for q in sent["qps"]:
        r = by_qpn[q["qpn"]]
        assert r["src_ip"] == a.ip
        assert r["bytes"] == q["payload_bytes"]
        assert r["packets"] == q["packets"]
        assert (r["lost"], r["out_of_order"], r["duplicates"], r["icrc_errors"]) == (0, 0, 0, 0)
        assert r["messages_complete"] == q["messages"] == len(r["messages"])
        # Go-back-N (the default): coalesced ACKs, at least one per message, none lost here,
        # and nothing resent on a clean link.
        assert r["acks_sent"] == q["acks"] >= q["messages"]
        assert q["acked_packets"] == q["packets"]
        assert (q["retransmitted_packets"], q["naks"], q["timeouts"]) == (0, 0, 0)
        assert (r["naks_sent"], r["seq_errors"]) == (0, 0)
        assert all(m["fct_s"] and m["fct_s"] > 0 for m in r["messages"]), [
            m for m in r["messages"] if not (m["fct_s"] and m["fct_s"] > 0)]
    assert sent["payload_bytes"] == 8 * 65536 + 50 * 3000 + 100 * 100
    # Distinct entropy per QP.
    assert len({q["sport"] for q in sent["qps"]}) == 3


def test_paced_rate_never_exceeds_the_target(pair_net, run_flow):
    # A starved CPU can only make the sender slower, never faster, so the bound that holds on
    # any machine is the upper one; the accuracy on an idle machine is measured by
    # bench/traffic_sender_pps.py.
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    sent, got = run_flow(a, b, [{"dst_ip": b.ip, "qpn": 5, "rate_bps": 20e6,
                                 "message_bytes": 1 << 20, "messages": 1}])
    q = sent["qps"][0]
    wire_rate = q["frame_bytes"] * 8 / (q["end"] - q["start"])
    assert 0.6 * 20e6 < wire_rate <= 1.02 * 20e6


def test_loss_and_reordering_are_counted_exactly(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    # 200 packets of 1024 B in 4 messages of 50 packets (PSN 0-49, 50-99, ...).
    qps = [{"dst_ip": b.ip, "qpn": 21, "rate_bps": 4e6, "message_bytes": 50 * 1024,
            "messages": 4}]
    with relay(relayed_net, drop="5,17,18,120", hold="10:3,30:7,160:1") as counts:
        sent, got = run_flow(a, b, qps, send=UC, recv={**UC, "record_delivery": True})
    assert counts["dropped"] == 4 and counts["held"] == 3
    r = got["qps"][0]
    assert sent["qps"][0]["packets"] == 200
    assert r["packets"] == 196
    assert r["lost"] == 4
    assert r["out_of_order"] == 3
    assert r["reorder_distance_max"] == 7
    assert r["reorder_distance_sum"] == 3 + 7 + 1
    assert r["duplicates"] == 0
    # The reorder buffer restored order; it gave up on exactly the dropped PSNs.
    seqs = r["delivered_seqs"]
    assert seqs == sorted(seqs) and set(seqs) == set(range(200)) - {5, 17, 18, 120}
    assert r["reorder_skipped"] == 4
    assert r["reorder_occupancy_max"] >= 7
    # Messages 0 (PSN 5, 17, 18) and 2 (PSN 120) lost packets; 1 and 3 are complete.
    assert [m["complete"] for m in r["messages"]] == [False, True, False, True]


def test_reorder_buffer_uses_the_tag_sequence(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    qps = [{"dst_ip": b.ip, "qpn": 22, "rate_bps": 4e6, "message_bytes": 40 * 1024,
            "messages": 1, "tag": True}]
    with relay(relayed_net, hold="3:4,20:2") as counts:
        _, got = run_flow(a, b, qps, recv={"record_delivery": True})
    assert counts["held"] == 2
    r = got["qps"][0]
    assert r["tagged"] == r["packets"] == 40
    assert r["icrc_errors"] == 0  # ICRC verified after stripping the tag
    assert r["out_of_order"] == 2 and r["reorder_distance_max"] == 4
    assert r["delivered_seqs"] == list(range(40))
    assert r["messages"][0]["complete"]


def test_corrupted_frames_fail_the_icrc(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    qps = [{"dst_ip": b.ip, "qpn": 23, "rate_bps": 4e6, "message_bytes": 30 * 1024,
            "messages": 1}]
    with relay(relayed_net, corrupt="4,9") as counts:
        _, got = run_flow(a, b, qps, send=UC, recv=UC)
    assert counts["corrupted"] == 2
    r = got["qps"][0]
    assert r["icrc_errors"] == 2
    assert r["packets"] == 28 and r["lost"] == 2  # dropped, as a NIC drops them


def test_ce_mark_produces_cnp_and_the_sender_slows_down(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    qps = [{"dst_ip": b.ip, "qpn": 24, "rate_bps": 10e6, "message_bytes": 300 * 1024,
            "messages": 1}]
    with relay(relayed_net, mark="100") as counts:
        sent, got = run_flow(a, b, qps, recv={"cnp_interval_s": 0.05})
    assert counts["marked"] == 1
    r = got["qps"][0]
    assert r["ce_marked"] == 1 and r["cnp_sent"] == 1
    q = sent["qps"][0]
    assert q["cnps"] == 1 and q["rate_cuts"] == 1
    # alpha starts at 1 and decays by (1-g) per update period until the cut: rate ~halves.
    t_cut, rate = q["rate_samples"][1]
    p = DcqcnParams.scaled(10e6)
    alpha = (1 - p.g) ** math.floor(t_cut / p.alpha_update_s)
    assert rate == pytest.approx(10e6 * (1 - alpha / 2), rel=1e-9)
    assert q["min_rate_bps"] == rate < 5.1e6
    assert q["rate_samples"][0] == [0.0, 10e6]
    # Fast recovery one rate-increase period later: halfway back to the 10 Mb/s target.
    t_up, rate_up = q["rate_samples"][2]
    assert rate_up == pytest.approx((10e6 + rate) / 2)
    assert t_up == pytest.approx(t_cut + p.rate_increase_s, abs=0.05)


def test_cnps_are_rate_limited_per_qp(relayed_net, run_flow):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    # ~1000 pps: two bursts of 50 marked packets (~50 ms each) ~300 ms apart, CNP interval
    # 200 ms: one CNP per burst.
    qps = [{"dst_ip": b.ip, "qpn": 25, "rate_bps": 8.6e6, "message_bytes": 500 * 1024,
            "messages": 1}]
    with relay(relayed_net, mark="100-149,400-449"):
        sent, got = run_flow(a, b, qps, send={"dcqcn": False}, recv={"cnp_interval_s": 0.2})
    r = got["qps"][0]
    assert r["ce_marked"] == 100
    assert r["cnp_sent"] == 2
    assert sent["qps"][0]["cnps"] == 2


def _pause_injector(host, quanta: int, xon_after: float | None = None):
    """Start traffic.pfc in `host`: one pause frame once data arrives (and XON later)."""
    args = ["--iface", host.iface, "--pause", f"3:{quanta}", "--wait-for-data"]
    if xon_after is not None:
        args += ["--xon-after", str(xon_after)]
    proc = host.popen(python_argv("traffic.pfc", *args), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "waiting"  # its socket is open
    return proc


def test_pfc_pause_stops_the_sender_for_the_pause_time(pair_net, run_flow):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    quanta = 3906  # x 512 bit / 10 Mb/s = 0.19999 s
    proc = _pause_injector(b, quanta)
    try:
        sent, got = run_flow(a, b, [{"dst_ip": b.ip, "qpn": 31, "rate_bps": 8e6,
                                     "message_bytes": 200 * 1024, "messages": 1}],
                             send={"link_bps": 10e6, "priority": 3})
    finally:
        proc.wait(10)
    assert sent["pause_frames"] == 1
    assert sent["paused_s"] == pytest.approx(quanta * 512 / 10e6)
    r = got["qps"][0]
    assert r["lost"] == 0 and r["bytes"] == 200 * 1024
    assert 0.19 <= r["max_gap_s"] < 0.30


def test_pfc_other_priority_and_xon(pair_net, run_flow):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    # A pause of priority 3 does not stop data sent on priority 4.
    proc = _pause_injector(b, 0xFFFF)
    try:
        sent, got = run_flow(a, b, [{"dst_ip": b.ip, "qpn": 32, "rate_bps": 8e6,
                                     "message_bytes": 100 * 1024, "messages": 1}],
                             send={"link_bps": 10e6, "priority": 4})
    finally:
        proc.wait(10)
    assert sent["pause_frames"] == 1 and sent["paused_s"] == 0
    assert got["qps"][0]["max_gap_s"] < 1.0  # a pause would stop it for 3.36 s
    # 0xFFFF quanta = 3.36 s at 10 Mb/s, ended by an XON after 0.1 s.
    proc = _pause_injector(b, 0xFFFF, xon_after=0.1)
    try:
        sent, got = run_flow(a, b, [{"dst_ip": b.ip, "qpn": 33, "rate_bps": 8e6,
                                     "message_bytes": 100 * 1024, "messages": 1}],
                             send={"link_bps": 10e6, "priority": 3})
    finally:
        proc.wait(10)
    assert sent["pause_frames"] == 2
    assert 0.09 <= sent["paused_s"] < 0.2
    assert 0.09 <= got["qps"][0]["max_gap_s"] < 0.2


def test_typed_configs_through_agents(pair_net):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    send = SenderConfig(iface=a.iface, qps=[QueuePairConfig(dst_ip=b.ip, qpn=51, rate_bps=8e6,
                                                            message_bytes=20_000, messages=2)])
    recv = ReceiverConfig(iface=b.iface, expect=[ExpectedFlow(a.ip, 51, 40_000)],
                          duration_s=30)
    with Agent(b) as rx, Agent(a) as tx:
        rx.start_recv(recv)
        tx.start_send(send)
        sent = SendResult.from_dict(tx.result(60))
        got = rx.result(60)
    assert sent.payload_bytes == got["bytes"] == 40_000
    assert got["qps"][0]["messages_complete"] == 2


def test_dual_port_host_one_receiver_both_ports(pair_net):
    """Like an HPN dual-port NIC: one address, two ports; a sender per port, one receiver."""
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    p = pair_net.prefix
    pair_net.link(a.netns, f"{p}a1", b.netns, f"{p}b1")
    a1 = NetnsHost("a1", a.netns, a.ip, f"{p}a1")  # no address of its own: uses the host's
    mac_b1 = b.run(["cat", f"/sys/class/net/{p}b1/address"]).stdout.strip()
    a.run(["ip", "neigh", "replace", b.ip, "lladdr", mac_b1, "dev", a1.iface, "nud",
           "permanent"])
    b.run(["ip", "neigh", "replace", a.ip, "lladdr",
           a.run(["cat", f"/sys/class/net/{p}a1/address"]).stdout.strip(), "dev", f"{p}b1",
           "nud", "permanent"])
    qp = {"dst_ip": b.ip, "rate_bps": 8e6, "message_bytes": 50_000, "messages": 2}
    with Agent(b) as rx, Agent(a) as tx0, Agent(a1) as tx1:
        rx.start_recv({"iface": f"{b.iface},{p}b1", "duration_s": 30,
                       "expect": [{"src_ip": a.ip, "qpn": q, "bytes": 100_000} for q in (61, 62)]})
        tx0.start_send({"iface": a.iface, "qps": [{**qp, "qpn": 61}]})
        tx1.start_send({"iface": a1.iface, "qps": [{**qp, "qpn": 62}]})
        sent = [tx0.result(60), tx1.result(60)]
        got = rx.result(60)
    assert sent[1]["src_ip"] == a.ip
    assert {q["qpn"]: q["bytes"] for q in got["qps"]} == {61: 100_000, 62: 100_000}
    # ACKs went back out of the port each QP's data came in on: every PSN acknowledged,
    # nothing resent (go-back-N would have timed out otherwise).
    for s in sent:
        q = s["qps"][0]
        assert q["acks"] >= 2 and q["acked_packets"] == q["packets"]
        assert q["retransmitted_packets"] == q["timeouts"] == 0


@pytest.mark.parametrize("shared", [False, True])
def test_switch_tags_with_offset_or_shared_counters(relayed_net, run_flow, shared):
    """Tags as a DLB switch inserts them: counters that start at 1000 (left over from earlier
    flows) or are shared by two QPs (one flow-table slot), so each QP's tag sequence has gaps
    that are not losses."""
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    qps = [{"dst_ip": b.ip, "qpn": q, "rate_bps": 4e6, "message_bytes": 30 * 1024,
            "messages": 2} for q in (71, 72)]
    opts = {"tag-from": "1000", "hold": "5:3,40:2"}
    if shared:
        opts["tag-shared"] = ""
    with relay(relayed_net, **opts) as counts:
        _, got = run_flow(a, b, qps, send=UC,
                          recv={**UC, "record_delivery": True, "reorder_timeout_s": 5.0})
    assert counts["tagged"] == 120
    for r in got["qps"]:
        assert r["tagged"] == r["packets"] == 60 and r["icrc_errors"] == 0
        assert r["delivered_seqs"] == list(range(60))
        assert r["reorder_skipped"] == 0 and r["lost"] == 0
        assert r["messages_complete"] == 2
        assert max(m["fct_s"] for m in r["messages"]) < 1.0  # never waited for the timeout
    held = {r["qpn"]: r["out_of_order"] for r in got["qps"]}
    assert sum(held.values()) == 4  # PSNs 5 and 40 of each QP were held back


@pytest.mark.parametrize("tagged", [False, True])
def test_cnp_on_out_of_order_only_for_untagged_flows(relayed_net, run_flow, tagged):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    qps = [{"dst_ip": b.ip, "qpn": 26, "rate_bps": 4e6, "message_bytes": 30 * 1024,
            "messages": 1, "tag": tagged}]
    with relay(relayed_net, hold="10:2"):
        sent, got = run_flow(a, b, qps, send=UC,
                             recv={**UC, "cnp_on_out_of_order": True, "cnp_interval_s": 1})
    r = got["qps"][0]
    assert r["out_of_order"] == 1 and r["ce_marked"] == 0
    assert (r["cnp_sent"], r["cnp_out_of_order"]) == ((0, 0) if tagged else (1, 1))
    assert sent["qps"][0]["cnps"] == r["cnp_sent"]


def test_sender_waits_out_a_full_interface_queue(pair_net, run_flow):
    """An unpaced sender into a small tbf queue: the kernel refuses frames (ENOBUFS); the sender
    waits and sends them again, as a NIC's send queue does, so nothing is lost or resent."""
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    a.run(["tc", "qdisc", "replace", "dev", a.iface, "root", "tbf", "rate", "20mbit",
           "burst", "8kb", "limit", "16kb"])
    sent, got = run_flow(a, b, [{"dst_ip": b.ip, "qpn": 71, "rate_bps": 0,
                                 "message_bytes": 300_000, "messages": 1}],
                         send={"dcqcn": False})
    assert sent["tx_busy"] > 0  # the queue did refuse frames
    q = sent["qps"][0]
    assert q["retransmitted_packets"] == q["timeouts"] == 0
    assert q["acked_packets"] == q["packets"]
    r = got["qps"][0]
    assert r["bytes"] == 300_000 and r["lost"] == 0 and r["messages_complete"] == 1


def test_workers_start_side_by_side(star4):
    hosts = list(star4.hosts.values())
    agents = Agent.start_many(hosts * 3)
    try:
        assert len(agents) == 12
        pids = {agent.proc.pid for agent in agents}
        assert len(pids) == 12 and all(agent.proc.poll() is None for agent in agents)
        # each answers requests: a receive armed on every host
        for agent, host in zip(agents, hosts, strict=False):
            agent.start_recv({"iface": host.iface, "duration_s": 0.2})
        for agent in agents[:4]:
            assert agent.result(10)["bytes"] == 0
    finally:
        for agent in agents:
            agent.close()
    assert all(agent.proc.poll() is not None for agent in agents)


def test_worker_start_failure_closes_the_started_ones(star4, monkeypatch):
    good = next(iter(star4.hosts.values()))
    gone = NetnsHost("gone", "trnope-ns", "10.9.9.9", "eth0")  # `ip netns exec` fails at once
    started: list[Agent] = []
    real_init = Agent.__init__

    def recorded(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(Agent, "__init__", recorded)
    with pytest.raises(AgentError, match="gone: worker exited"):
        Agent.start_many([good, good, gone])
    assert len(started) == 3
    assert all(agent.proc.poll() is not None for agent in started)
