"""The wire layout (`traffic.wire`) against scapy: offsets derived from the layer declarations
read the same field values from real frames as scapy's dissection, and the fast paths that use
them (sender, receiver, relay, PFC, BPF) see what scapy sees."""

from __future__ import annotations

import random

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.contrib.roce import AETH, BTH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from traffic import wire
from traffic.frames import Endpoints, add_tag, build_frame
from traffic.headers import (
    ACK,
    CNP,
    RETH,
    SEND_MIDDLE,
    TAG_FLAG_SWITCH,
    WRITE_FIRST,
    WRITE_ONLY,
    ReorderTag,
)
from traffic.impair import data_psn
from traffic.pfc import build_pause, parse_pause

LAYERS = [(wire.ETHER, Ether), (wire.IPV4, IP), (wire.UDP_HDR, UDP), (wire.TAG, ReorderTag),
          (wire.BTH_HDR, BTH), (wire.RETH_HDR, RETH), (wire.AETH_HDR, AETH),
          (wire.CNP_PAD, CNPPadding), (wire.PFC, MACControlClassBasedFlowControl)]


def _random_value(layer: type[Packet], name: str, field: wire.FieldAt, rng: random.Random):
    """A random value scapy accepts for the field (addresses as text)."""
    if layer is Ether and name in ("dst", "src"):
        return ":".join(f"{rng.getrandbits(8):02x}" for _ in range(6))
    if layer is IP and name in ("src", "dst"):
        return ".".join(str(rng.getrandbits(8)) for _ in range(4))
    return rng.getrandbits(bin(field.mask >> field.shift).count("1"))


def _as_int(value) -> int:
    if isinstance(value, str) and ":" in value:
        return int(value.replace(":", ""), 16)
    if isinstance(value, str):
        return int.from_bytes(bytes(int(x) for x in value.split(".")), "big")
    return int(value)


@pytest.mark.parametrize(("layout", "layer"), LAYERS, ids=[lay.name for lay, _ in LAYERS])
def test_every_field_reads_back_what_scapy_wrote(layout, layer):
    """Each layer built by scapy with random values in every field: the derived offset, size,
    shift and mask give back each value, and the header length is scapy's."""
    rng = random.Random(layout.name)
    assert layout.fields, layout
    for _ in range(50):
        values = {name: _random_value(layer, name, f, rng) for name, f in layout.fields.items()}
        if layer is IP:
            values["ihl"] = 5  # the fixed header is IPv4 without options
        raw = bytes(layer(**values))
        assert len(raw) >= layout.length
        for name, field in layout.fields.items():
            assert field.read(raw) == _as_int(values[name]), (layout.name, name)


def test_header_lengths_are_scapy_builds():
    assert wire.ETH_LEN == len(Ether()) == 14
    assert wire.IPV4_LEN == len(IP()) == 20
    assert wire.UDP_LEN == len(UDP()) == 8
    assert wire.TAG_LEN == len(ReorderTag()) == 8
    assert wire.BTH_LEN == len(BTH()) - wire.ICRC_LEN == 12
    assert wire.RETH_LEN == len(RETH()) == 16
    assert wire.AETH_LEN == len(AETH()) == 4
    assert wire.CNP_PAD_LEN == len(CNPPadding()) == 16
    pfc = bytes(MACControlClassBasedFlowControl(c3_enabled=1, c3_pause_time=7))
    assert wire.PFC_LEN == 20 and pfc[wire.PFC_LEN :] == bytes(len(pfc) - wire.PFC_LEN)  # scapy pads


EP = Endpoints("02:00:00:00:00:01", "02:00:00:00:00:02", "10.1.0.1", "10.1.0.2", 49200, 0x1234)


def _frames(rng: random.Random):
    """Real frames of every kind the lab sends, with random field values."""
    for _ in range(40):
        ep = Endpoints(EP.src_mac, EP.dst_mac, f"10.{rng.randrange(256)}.0.1",
                       f"10.{rng.randrange(256)}.0.2", rng.randrange(1024, 65536),
                       rng.getrandbits(24), rng.randrange(64), rng.randrange(4))
        psn = rng.getrandbits(24)
        yield build_frame(ep, WRITE_FIRST, psn, rng.randbytes(64), dlen=4096, va=rng.getrandbits(64),
                          rkey=rng.getrandbits(32), ackreq=rng.random() < 0.5)
        yield build_frame(ep, SEND_MIDDLE, psn, rng.randbytes(100), ackreq=rng.random() < 0.5,
                          tag=(rng.getrandbits(16), rng.getrandbits(32)))
        yield build_frame(ep, ACK, psn, syndrome=rng.choice([0, 0x60]), msn=rng.getrandbits(24))
        yield build_frame(ep, CNP, psn, becn=True)
        plain = build_frame(ep, WRITE_ONLY, psn, rng.randbytes(32), dlen=32)
        yield add_tag(plain, rng.getrandbits(16), rng.getrandbits(32), TAG_FLAG_SWITCH)


def test_roce_offsets_read_what_scapy_dissects():
    rng = random.Random(15)
    seen_tagged = seen_plain = 0
    for frame in _frames(rng):
        pkt = Ether(frame)
        at = wire.roce_layout(frame)
        tagged = ReorderTag in pkt
        assert at.tagged == tagged
        seen_tagged += tagged
        seen_plain += not tagged
        ip, udp, bth = pkt[IP], pkt[UDP], pkt[BTH]
        assert frame[wire.ETH_DST] == bytes.fromhex(pkt.dst.replace(":", ""))
        assert frame[wire.ETH_SRC] == bytes.fromhex(pkt.src.replace(":", ""))
        assert int.from_bytes(frame[wire.ETH_TYPE], "big") == pkt.type == 0x0800
        assert frame[wire.IP_VER_IHL_AT] == wire.IPV4_NO_OPTIONS == (ip.version << 4 | ip.ihl)
        assert frame[wire.IP_TOS_AT] == ip.tos and frame[wire.IP_TOS_AT] & wire.ECN_MASK == ip.tos & 3
        assert frame[wire.IP_TTL_AT] == ip.ttl
        assert frame[wire.IP_PROTO_AT] == ip.proto
        assert int.from_bytes(frame[wire.IP_LEN], "big") == ip.len
        assert int.from_bytes(frame[wire.IP_CHKSUM], "big") == ip.chksum
        assert frame[wire.IP_SRC] == bytes(int(x) for x in ip.src.split("."))
        assert frame[wire.IP_DST] == bytes(int(x) for x in ip.dst.split("."))
        assert frame[wire.IP_HEADER] == bytes(ip)[:wire.IPV4_LEN]
        if tagged:
            tag = pkt[ReorderTag]
            assert int.from_bytes(frame[wire.TAG_SEQ], "big") == tag.seq
            assert frame[wire.TAG_FLAGS_AT] == int(tag.flags)
        assert int.from_bytes(frame[at.sport], "big") == udp.sport
        assert int.from_bytes(frame[at.dport], "big") == udp.dport == 4791
        if not tagged:
            assert frame[wire.PLAIN_FLOW] == frame[wire.IP_ADDRS] + frame[at.sport] + frame[at.dport]
        assert frame[at.opcode] == bth.opcode
        assert int.from_bytes(frame[at.dqpn], "big") == bth.dqpn
        assert int.from_bytes(frame[at.psn], "big") == bth.psn
        assert bool(frame[at.ackreq] & wire.BTH_ACKREQ_MASK) == bool(bth.ackreq)
        assert frame[at.bth + wire.BTH_FECN_AT] >> 6 == (bth.fecn << 1 | bth.becn)
        assert frame[-wire.ICRC_LEN:] == bth.icrc.to_bytes(4, "big")
        assert bytes(bth)[: wire.BTH_LEN] == frame[at.bth : at.bth_end]
        if AETH in pkt:
            assert frame[at.syndrome] == pkt[AETH].syndrome
            assert frame[at.syndrome : at.aeth_end] == bytes(pkt[AETH])[: wire.AETH_LEN]
        if RETH in pkt:
            assert frame[at.bth_end : at.bth_end + wire.RETH_LEN] == bytes(pkt[RETH])[: wire.RETH_LEN]
        psn = data_psn(frame)
        assert psn == (bth.psn if bth.opcode not in (ACK, CNP) else None)
    assert seen_tagged and seen_plain


def test_udp_and_bth_start_where_scapy_puts_them():
    frame = build_frame(EP, WRITE_ONLY, 5, b"x" * 20, dlen=20)
    tagged = add_tag(frame, 1, 2)
    for f, at in ((frame, wire.PLAIN), (tagged, wire.TAGGED)):
        pkt = Ether(f)
        assert f[at.udp :] == bytes(pkt[UDP])
        assert f[at.bth :] == bytes(pkt[BTH])
        assert len(f) - at.min_len - wire.RETH_LEN == len(pkt[RETH].payload) == 20


def test_pfc_offsets_read_what_scapy_dissects():
    rng = random.Random(8)
    for _ in range(50):
        quanta = {p: rng.getrandbits(16) for p in rng.sample(range(8), rng.randrange(1, 9))}
        frame = build_pause("02:00:00:00:00:09", quanta)
        pkt = Ether(frame)
        pfc = pkt[MACControlClassBasedFlowControl]
        assert int.from_bytes(frame[wire.ETH_TYPE], "big") == pkt.type == 0x8808
        assert int.from_bytes(frame[wire.PFC_OPCODE_AT : wire.PFC_OPCODE_AT + 2], "big") == pfc._op_code
        enable = frame[wire.PFC_ENABLE_AT]
        for prio in range(8):
            assert bool(enable >> prio & 1) == bool(getattr(pfc, f"c{prio}_enabled"))
            at = wire.PFC_TIMES_AT + 2 * prio
            assert int.from_bytes(frame[at : at + 2], "big") == getattr(pfc, f"c{prio}_pause_time")
        expected = {p: getattr(pfc, f"c{p}_pause_time") for p in range(8) if getattr(pfc, f"c{p}_enabled")}
        assert parse_pause(frame) == expected == quanta


def test_layout_stops_at_ipv4_options_and_keeps_the_trailer_out():
    assert "options" not in wire.IPV4.fields
    assert "icrc" not in wire.BTH_HDR.fields and wire.BTH_HDR.trailers == {"icrc": 4}
    assert wire.IPV4["ihl"].mask == wire.IP_IHL_MASK == 0x0F
    assert wire.BTH_HDR["ackreq"] == wire.FieldAt(8, 1, 7, 0x80)
    assert wire.BTH_HDR["dqpn"] == wire.FieldAt(5, 3, 0, 0xFFFFFF)
