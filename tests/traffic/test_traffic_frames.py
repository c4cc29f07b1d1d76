"""RoCEv2 framing: scapy layers, ICRC against scapy, templates, the DLB tag, tshark decoding."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from scapy.contrib.roce import AETH, BTH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from traffic.frames import (
    ECN_CE,
    Endpoints,
    FrameTemplate,
    add_tag,
    build_frame,
    compute_icrc,
    icrc_ok,
    set_ipv4_checksum,
    strip_tag,
)
from traffic.headers import RETH, ReorderTag

EP = Endpoints("02:00:00:00:00:01", "02:00:00:00:00:02", "10.1.0.1", "10.1.0.2", 49200, 0x1234)


def scapy_frame(opcode: int, psn: int, payload: bytes, dqpn: int = 0x1234, tos: int = 0x6A,
                **reth: int) -> bytes:
    """The reference: a frame built with scapy alone (scapy computes the ICRC)."""
    bth = BTH(opcode=opcode, dqpn=dqpn, psn=psn)
    if reth:
        bth = bth / RETH(**reth)
    pkt = (Ether(src=EP.src_mac, dst=EP.dst_mac) / IP(src=EP.src_ip, dst=EP.dst_ip, tos=tos)
           / UDP(sport=EP.sport, dport=4791) / bth / payload)
    return bytes(pkt)


def test_icrc_matches_scapy_for_many_frames():
    rng = random.Random(7)
    for _ in range(200):
        opcode = rng.choice([0x00, 0x01, 0x02, 0x04, 0x06, 0x07, 0x08, 0x0A, 0x24, 0x2A])
        payload = rng.randbytes(rng.randrange(0, 1100))
        reth = {"va": rng.getrandbits(64), "rkey": rng.getrandbits(32), "dlen": len(payload)}
        frame = scapy_frame(opcode, rng.getrandbits(24), payload, dqpn=rng.getrandbits(24),
                            tos=rng.getrandbits(8), **(reth if opcode in (6, 10, 0x2A) else {}))
        assert compute_icrc(frame) == frame[-4:]


def test_icrc_ignores_ecn_ttl_rewrites_but_not_payload_changes():
    frame = bytearray(build_frame(EP, 0x0A, 5, b"abcdefgh" * 8, dlen=64))
    ip = bytearray(frame[14:34])
    ip[1] |= ECN_CE
    ip[8] -= 3  # TTL, as three routers would
    set_ipv4_checksum(ip)
    frame[14:34] = ip
    assert icrc_ok(frame)
    frame[-6] ^= 0x40
    assert not icrc_ok(frame)


def test_built_frames_decode_with_scapy_layers():
    f = Ether(build_frame(EP, 0x06, 9, bytes(100), dlen=4096, va=0x1000, rkey=7, ackreq=True))
    assert f[BTH].opcode == 0x06 and f[BTH].psn == 9 and f[BTH].ackreq == 1
    assert (f[RETH].va, f[RETH].rkey, f[RETH].dlen) == (0x1000, 7, 4096)
    assert f[IP].tos == (26 << 2) | 2  # DSCP 26, ECT(0)
    assert len(f[RETH].payload.load) == 100
    ack = Ether(build_frame(EP, 0x11, 9, msn=3))
    assert ack[AETH].msn == 3
    cnp = Ether(build_frame(EP, 0x81, becn=True))
    assert cnp[BTH].becn == 1 and cnp.haslayer(CNPPadding)
    assert len(bytes(cnp[BTH])) == 12 + 16 + 4


def test_example_frame_size_from_parameters():
    # Ether/IP(tos=2)/UDP/BTH(opcode=0x0a)/1024 B payload = 1082 B on the wire (no FCS).
    assert len(build_frame(EP, 0x04, 0, bytes(1024))) == 1082


def test_template_render_equals_scapy_build():
    rng = random.Random(3)
    for opcode, stamped in ((0x06, True), (0x07, False), (0x08, False), (0x0A, True)):
        for tag in (None, (0x1234, 0)):
            tmpl = FrameTemplate(build_frame(EP, opcode, 0, bytes(512), dlen=9999, tag=tag),
                                 stamped=stamped)
            for _ in range(20):
                psn, seq, ack = rng.getrandbits(24), rng.getrandbits(32), rng.random() < 0.5
                stamp = rng.getrandbits(63) if stamped else 0
                payload = stamp.to_bytes(8, "big") + bytes(504) if stamped else bytes(512)
                want = build_frame(EP, opcode, psn, payload, dlen=9999, ackreq=ack,
                                   tag=(tag[0], seq) if tag else None)
                assert bytes(tmpl.render(psn, ack, seq, stamp)) == want


def test_reorder_tag_layer_and_icrc_over_untagged_packet():
    plain = build_frame(EP, 0x0A, 77, bytes(64), dlen=64)
    tagged = add_tag(plain, flow_id=0xBEEF, seq=123456)
    p = Ether(tagged)
    assert p[IP].proto == 253 and p[IP].len == len(plain) - 14 + 8
    assert (p[ReorderTag].next_proto, p[ReorderTag].flow_id, p[ReorderTag].seq) == (17, 0xBEEF,
                                                                                     123456)
    assert p[ReorderTag].flags == 0x01
    assert p[UDP].dport == 4791 and p[BTH].psn == 77
    assert IP(bytes(p[IP])).chksum == p[IP].chksum  # header checksum valid
    assert tagged[-4:] == plain[-4:]  # the ICRC is that of the untagged packet
    assert icrc_ok(tagged)
    assert strip_tag(tagged) == plain


def test_scapy_layered_tagged_frame_gets_the_untagged_icrc():
    built = (Ether(src=EP.src_mac, dst=EP.dst_mac)
             / IP(src=EP.src_ip, dst=EP.dst_ip, tos=0x6A, id=0, flags="DF")
             / ReorderTag(flow_id=0xBEEF, seq=7)
             / UDP(sport=EP.sport, dport=4791, chksum=0)
             / BTH(opcode=0x0A, dqpn=EP.dqpn, psn=3) / RETH(dlen=64) / bytes(64))
    frame = bytes(built)
    assert Ether(frame)[IP].proto == 253
    assert icrc_ok(frame)
    assert frame == build_frame(EP, 0x0A, 3, bytes(64), dlen=64, tag=(0xBEEF, 7))


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
def test_tshark_decodes_frames_without_errors(tmp_path):
    frames = [
        build_frame(EP, 0x06, 0, bytes(1024), dlen=2500),
        build_frame(EP, 0x07, 1, bytes(1024)),
        build_frame(EP, 0x08, 2, bytes(452), ackreq=True),
        build_frame(EP, 0x0A, 3, bytes(100), dlen=100),
        build_frame(EP, 0x04, 4, bytes(64)),
        build_frame(EP, 0x11, 4),
        build_frame(EP, 0x81, becn=True),
    ]
    pcap = tmp_path / "roce.pcap"
    wrpcap(str(pcap), [Ether(f) for f in frames])
    protos = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.protocols"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert protos == ["eth:ethertype:ip:udp:infiniband:data"] * 4 + [
        "eth:ethertype:ip:udp:infiniband"] * 3
    expert = subprocess.run(["tshark", "-r", str(pcap), "-q", "-z", "expert"],
                            capture_output=True, text=True, check=True).stdout
    assert "Error" not in expert and "Malformed" not in expert and "Warning" not in expert
    psns = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "infiniband.bth.psn",
                           "-e", "infiniband.reth.dmalen"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert psns[0].split() == ["0", "2500"] and psns[3].split() == ["3", "100"]
