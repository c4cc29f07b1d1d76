"""What actually crossed the wire: captured frames decoded by tshark and checked against scapy,
and receiver counts compared with counts computed independently from a capture (with the
impairment relay, and with `tc netem` where the kernel has it)."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from scapy.contrib.roce import BTH
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap
from traffic_helpers import capture, data_psns, expected_counts, relay

from traffic.frames import compute_icrc, strip_tag

pytestmark = pytest.mark.root

UC = {"go_back_n": False}  # every PSN sent once: the wire's loss and reordering, unrepaired


def _scapy_icrc(frame: bytes) -> bytes:
    """scapy's own ICRC for the (untagged) frame: rebuild it with the field left empty."""
    pkt = Ether(strip_tag(frame))
    pkt[BTH].icrc = None
    return bytes(pkt)[-4:]


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
def test_captured_frames_decode_and_carry_scapy_icrcs(pair_net, run_flow, tmp_path):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    pcap = str(tmp_path / "wire.pcap")
    with capture(b, pcap):
        run_flow(a, b, [{"dst_ip": b.ip, "qpn": 41, "rate_bps": 8e6, "message_bytes": 5000,
                         "messages": 3},
                        {"dst_ip": b.ip, "qpn": 42, "rate_bps": 8e6, "message_bytes": 3000,
                         "messages": 2, "verb": "send", "tag": True}])
    frames = [bytes(p) for p in rdpcap(pcap)]
    assert len(frames) == 3 * 5 + 2 * 3
    for f in frames:
        assert _scapy_icrc(f) == f[-4:] == compute_icrc(f)
    fields = subprocess.run(
        ["tshark", "-r", pcap, "-Y", "udp.port == 4791", "-T", "fields", "-e",
         "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn"],
        capture_output=True, text=True, check=True).stdout.split("\n")
    rows = [r.split("\t") for r in fields if r]
    write = [r for r in rows if int(r[1], 0) == 41]
    assert [r[0] for r in write] == ["6", "7", "7", "7", "8"] * 3
    assert [int(r[2]) for r in write] == list(range(15))
    # the tagged SENDs reach UDP only through the lab's dissector (`make setup` installs it)
    protocols = subprocess.run(["tshark", "-G", "protocols"], capture_output=True, text=True,
                               check=True).stdout
    send = [r for r in rows if int(r[1], 0) == 42]
    if "\tfabtag\n" in protocols:
        assert [r[0] for r in send] == ["0", "1", "2"] * 2
        assert [int(r[2]) for r in send] == list(range(6))
    else:
        assert send == []
    assert len(rows) == len(write) + len(send)
    expert = subprocess.run(["tshark", "-r", pcap, "-q", "-z", "expert"], capture_output=True,
                            text=True, check=True).stdout
    assert "Error" not in expert and "Malformed" not in expert


def test_receiver_counts_match_an_independent_count(relayed_net, run_flow, tmp_path):
    a, b = relayed_net.hosts["a"], relayed_net.hosts["b"]
    rng = random.Random(11)
    drops = sorted(rng.sample(range(1, 299), 12))
    holds = {p: rng.randint(1, 12) for p in rng.sample(range(1, 280), 10) if p not in drops}
    pcap = str(tmp_path / "arrivals.pcap")
    with capture(b, pcap), relay(relayed_net, drop=",".join(map(str, drops)),
                                 hold=",".join(f"{p}:{k}" for p, k in holds.items())):
        _, got = run_flow(a, b, [{"dst_ip": b.ip, "qpn": 43, "rate_bps": 4e6,
                                  "message_bytes": 300 * 1024, "messages": 1}],
                          send=UC, recv=UC)
    want = expected_counts(data_psns(pcap))
    r = got["qps"][0]
    assert want["lost"] == len(drops)
    assert want["out_of_order"] == len(holds)
    assert {k: r[k] for k in want} == want


def _netem_available(host) -> bool:
    probe = host.run(["tc", "qdisc", "add", "dev", host.iface, "root", "netem", "delay", "1ms"],
                     check=False)
    if probe.returncode == 0:
        host.run(["tc", "qdisc", "del", "dev", host.iface, "root"], check=False)
    return probe.returncode == 0


def test_netem_loss_and_reordering_counted_exactly(pair_net, run_flow, tmp_path):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    if not _netem_available(a):
        pytest.skip("this kernel has no sch_netem (the relay tests inject the same faults)")
    a.run(["tc", "qdisc", "add", "dev", a.iface, "root", "netem", "delay", "10ms",
           "reorder", "20%", "loss", "2%"])
    pcap = str(tmp_path / "netem.pcap")
    with capture(b, pcap):
        _, got = run_flow(a, b, [{"dst_ip": b.ip, "qpn": 44, "rate_bps": 4e6,
                                  "message_bytes": 400 * 1024, "messages": 1}],
                          send=UC, recv=UC)
    want = expected_counts(data_psns(pcap))
    r = got["qps"][0]
    assert want["out_of_order"] > 0 and want["lost"] > 0
    assert {k: r[k] for k in want} == want
