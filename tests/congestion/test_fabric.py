"""ECN marking, PFC frames, lossless incast, head-of-line blocking and the PFC watchdog on a real
Mininet fabric of p4switch processes (two leaves, one spine; see experiments/incast/lab.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from controller.congestion import CongestionConfig, EcnProfile, PfcConfig, set_port_pfc
from controller.pfc_agent import p4switch_watchdog
from experiments.incast.trial import run_trial
from tests.congestion.helpers import PARAMS, capture
from traffic.hosts import MininetHost, python_argv
from traffic.receiver import ExpectedFlow, ReceiverConfig
from traffic.sender import QueuePairConfig, SenderConfig

pytestmark = [pytest.mark.mininet, pytest.mark.slow, pytest.mark.timeout(600)]

BURST = 56  # packets: fits the 64-packet queue, so nothing is dropped


def _burst(lab, roles, agents, pcap: Path, *, ecn_capable: bool, qpn: int) -> dict[int, int]:
    """One unpaced message from the first sender into the congested port; PSN -> ECN bits as
    captured at the receiver."""
    src, dst = roles.senders[0], roles.receiver
    rx = agents[dst]
    rx.start_recv(ReceiverConfig(iface=lab.iface(dst), idle_timeout_s=1.0, cnp=False,
                                 expect=[ExpectedFlow(lab.ip(src), qpn, BURST * 1024)]))
    rx_filter = f"udp port 4791 and dst host {lab.ip(dst)}"
    with capture(lab.net.host(dst), lab.iface(dst), pcap, rx_filter):
        agents[src].start_send(SenderConfig(
            iface=lab.iface(src), ecn_capable=ecn_capable, dcqcn=False, link_bps=10e6,
            qps=[QueuePairConfig(lab.ip(dst), qpn, rate_bps=0, message_bytes=BURST * 1024)]))
        agents[src].result(30)
        received = rx.result(30)
    assert received["qps"][0]["packets"] == BURST
    out = {}
    for pkt in rdpcap(str(pcap)):
        if BTH in pkt and pkt[BTH].opcode != 0x81:
            out[pkt[BTH].psn] = pkt[IP].tos & 3
    return out


def test_ecn_marks_between_kmin_and_kmax_some_above_kmax_all(incast_lab, tmp_path) -> None:
    lab, roles, agents = incast_lab
    lab.configure(CongestionConfig(ecn=EcnProfile(kmin=5, kmax=20, pmax=1.0)))
    leaf, up = roles.leaf_up
    spine, down = roles.spine_down
    try:  # fabric ports unlimited: the burst reaches the congested port at once
        lab.channels[leaf].command(f"set_queue_rate 0 {up}")
        lab.channels[spine].command(f"set_queue_rate 0 {down}")
        ect = _burst(lab, roles, agents, tmp_path / "ect.pcap", ecn_capable=True, qpn=0x301)
        plain = _burst(lab, roles, agents, tmp_path / "plain.pcap", ecn_capable=False,
                       qpn=0x302)
    finally:
        lab.set_queues()
    assert sorted(ect) == list(range(BURST))
    # packet k found about k packets queued (the port drains 250 pps, the burst comes in ~10 ms)
    assert all(ect[psn] == 2 for psn in range(6)), ect  # at or below kmin: never
    middle = [ect[psn] for psn in range(8, 20)]
    assert 3 in middle and 2 in middle, ect  # between kmin and kmax: some
    assert all(ect[psn] == 3 for psn in range(44, BURST)), ect  # well over kmax: all
    assert sorted(plain) == list(range(BURST))
    assert set(plain.values()) == {0}  # not ECN-capable: never marked


def test_dcqcn_cuts_the_rate_on_cnps_through_the_fabric(incast_lab) -> None:
    """One sender at twice the congested port's rate: marks -> CNPs -> rate cuts."""
    lab, roles, agents = incast_lab
    lab.configure(CongestionConfig(ecn=EcnProfile(PARAMS["kmin"], PARAMS["kmax"],
                                                  PARAMS["pmax"])))
    src, dst = roles.senders[1], roles.receiver
    start_bps = 2 * PARAMS["host_pps"] * 1082 * 8
    agents[dst].start_recv(ReceiverConfig(iface=lab.iface(dst), idle_timeout_s=1.0,
                                          duration_s=6.0))
    agents[src].start_send(SenderConfig(
        iface=lab.iface(src), link_bps=10e6, duration_s=3.0,
        qps=[QueuePairConfig(lab.ip(dst), 0x500, rate_bps=start_bps, messages=None)]))
    sent = agents[src].result(30)["qps"][0]
    received = agents[dst].result(30)["qps"][0]
    assert received["ce_marked"] > 0 and received["cnp_sent"] > 0
    # CNPs cross the fabric back (those sent after the sender stopped find no one)
    assert 0 < sent["cnps"] <= received["cnp_sent"]
    assert sent["rate_cuts"] > 0 and sent["min_rate_bps"] < 0.75 * start_bps


@pytest.fixture(scope="module")
def incast_runs(incast_lab, tmp_path_factory):
    """The same incast without and with PFC; PFC frames captured at a sender."""
    lab, roles, agents = incast_lab
    none = run_trial(lab, roles, "none", PARAMS, agents)
    pcap = tmp_path_factory.mktemp("pfc") / "sender.pcap"
    src = roles.senders[0]
    with capture(lab.net.host(src), lab.iface(src), pcap, "ether proto 0x8808"):
        pfc = run_trial(lab, roles, "pfc", PARAMS, agents)
    return none.summary, pfc.summary, pcap


def test_incast_drops_without_pfc_and_none_with_it(incast_runs) -> None:
    none, pfc, _ = incast_runs
    # the senders' go-back-N resends what the congested port dropped
    assert none["drops_congested"] > 0 and none["retransmitted"] > 0
    assert pfc["drops_congested"] == 0  # (a host paused past its RTO may still resend)
    assert pfc["lost"] == 0 and pfc["messages_complete"] == pfc["senders"]


def test_trimming_cuts_what_the_congested_queue_would_drop_and_the_receiver_naks_it(
        incast_lab, incast_runs) -> None:
    """The same incast with trimming from 16 packets: the data queue stays short and drops
    nothing, the overflow arrives as headers the receiver NAKs at once, every message
    completes, with go-back-N and with selective retransmission; the selective senders resend
    fewer packets than the go-back-N ones."""
    lab, roles, agents = incast_lab
    runs = {s: run_trial(lab, roles, s, PARAMS, agents).summary for s in ("trim", "trim+sr")}
    for summary in runs.values():
        assert summary["trimmed"] > 0 and summary["drops_congested"] == 0
        assert summary["peak_queue_congested"] <= 2 * PARAMS["trim_depth"]
        assert summary["messages_complete"] == summary["senders"]
    assert runs["trim+sr"]["retransmitted"] < runs["trim"]["retransmitted"]


def test_counter_balance_counts_the_traffic_managers_drops(incast_runs) -> None:
    """The balance of the P4 counters (what BMv2 reports drops by) against p4switch's
    tail-drop counts, packet for packet."""
    for run in incast_runs[:2]:
        assert run["balance_congested"] == run["drops_congested"]
        assert run["balance_spine"] + run["balance_leaf"] == run["drops_fabric"]
    assert incast_runs[0]["balance_congested"] > 0


def test_pfc_pause_propagates_and_the_queue_moves_upstream(incast_runs) -> None:
    """Without PFC the congested port fills and drops; with it the port stays below its
    capacity and the spine's queue, paused, holds the arrivals that pause its upstream, and so on
    up to the hosts. (The spine's peak is not compared across the two runs: its port drains
    faster than the incast arrives, and at 85% load its queue reaches 5-11 packets without PFC
    too, depending on how busy the machine is.)"""
    none, pfc, _ = incast_runs
    assert pfc["spine_paused_s"] > 0 and pfc["host_pause_frames"] > 0
    assert none["peak_queue_congested"] == PARAMS["depth"] - 1  # full: every arrival found 63
    assert pfc["peak_queue_congested"] < none["peak_queue_congested"]
    threshold = PfcConfig(PARAMS["xoff"], PARAMS["xon"]).paused_threshold
    assert pfc["peak_queue_upstream"] >= threshold  # what the spine held before pausing upstream


def test_victim_flow_slows_down_under_pfc(incast_runs) -> None:
    none, pfc, _ = incast_runs
    assert pfc["victim_mbps_during"] < 0.6 * pfc["victim_mbps_before"]  # head-of-line blocked
    # Without PFC the victim is not paused, only shares the fabric links with the incast and
    # its go-back-N resends (how much that costs depends on how busy the machine is): it keeps
    # clearly more than under the pauses.
    assert none["victim_mbps_during"] > 1.3 * pfc["victim_mbps_during"]


def test_pfc_frames_are_bit_exact_802_1qbb(incast_lab, incast_runs) -> None:
    lab, roles, _ = incast_lab
    _, _, pcap = incast_runs
    leaf, port = lab.spec.attachments(roles.senders[0])[0]
    leaf_mac = next(ln.end(leaf).mac for ln in lab.spec.links_of(leaf)
                    if ln.end(leaf).port == port)
    frames = [bytes(p) for p in rdpcap(str(pcap))]
    assert frames, "no PFC frame reached the sender"
    quanta_seen = set()
    for raw in frames:
        assert len(raw) == 60
        assert raw[:6] == bytes.fromhex("0180c2000001")
        assert raw[6:12] == bytes.fromhex(leaf_mac.replace(":", ""))
        assert raw[12:16] == b"\x88\x08\x01\x01"
        assert raw[16:18] == b"\x00\x08"  # class 3 (DSCP 26) only
        times = [int.from_bytes(raw[18 + 2 * i:20 + 2 * i], "big") for i in range(8)]
        assert times[:3] == [0, 0, 0] and times[4:] == [0, 0, 0, 0]
        assert times[3] in (0, PARAMS["quanta"])
        quanta_seen.add(times[3])
        assert raw[34:] == bytes(26)
        pfc = Ether(raw)[MACControlClassBasedFlowControl]
        assert pfc.c3_enabled == 1 and pfc.c3_pause_time == times[3]
    assert PARAMS["quanta"] in quanta_seen


def test_watchdog_drops_a_stormed_queue_and_restores_it(incast_lab) -> None:
    lab, roles, agents = incast_lab
    pfc = PfcConfig(PARAMS["xoff"], PARAMS["xon"], PARAMS["quanta"], PARAMS["refresh_us"])
    lab.configure(CongestionConfig(pfc=pfc))
    switch, port = roles.victim_port
    client = lab.ctl.clients[switch]
    dog = p4switch_watchdog(
        lab.channels, [(switch, port, 3)], restore_depth=PARAMS["depth"],
        pfc_off=lambda sw, p: set_port_pfc(lab.ctl.clients[sw], lab.ctl.schema, p, pfc,
                                           enabled=False),
        pfc_on=lambda sw, p: set_port_pfc(lab.ctl.clients[sw], lab.ctl.schema, p, pfc,
                                          enabled=True)).start()
    src, dst = roles.victim_src, roles.victim_dst
    try:
        agents[dst].start_recv(ReceiverConfig(iface=lab.iface(dst), idle_timeout_s=1.0,
                                              duration_s=6.0))
        agents[src].start_send(SenderConfig(
            iface=lab.iface(src), link_bps=10e6, duration_s=4.0,
            qps=[QueuePairConfig(lab.ip(dst), 0x400, rate_bps=100 * 1082 * 8, messages=None)]))
        time.sleep(0.5)
        dropped_before = lab.channels[switch].queue_stats(port, 3)["dropped"]
        # the victim's NIC pauses its switch port for 3.4 s and resumes after 1.5 s: a storm
        storm = MininetHost(lab.net.host(dst)).popen(
            python_argv("traffic.pfc", "--iface", lab.iface(dst), "--pause", "3:65535",
                        "--xon-after", "1.5"))
        assert storm.wait(20) == 0
        time.sleep(0.6)
        events = [(e.kind, e.switch, e.port) for e in dog.events]
        stats = lab.channels[switch].queue_stats(port, 3)
        sent = agents[src].result(30)
        received = agents[dst].result(30)
    finally:
        dog.stop()
    assert events == [("storm", switch, port), ("restore", switch, port)], dog.errors
    assert stats["dropped"] > dropped_before  # the stormed queue dropped instead of backing up
    entries = client.read([_pfc_key(lab, port)])
    assert len(entries) == 1  # PFC on the port again after the restore
    assert received["qps"][0]["packets"] > 0 and sent["qps"][0]["packets"] > 0


def _pfc_key(lab, port: int):
    from p4.v1 import p4runtime_pb2

    from controller.schema import encode

    entity = p4runtime_pb2.Entity()
    table = lab.ctl.schema.table("FabricEgress.pfc.pfc_config")
    entity.table_entry.table_id = table.preamble.id
    for mf, value in zip(table.match_fields, (port, 3), strict=True):  # (port, priority 3)
        entity.table_entry.match.add(field_id=mf.id).exact.value = encode(value, mf.bitwidth)
    return entity
