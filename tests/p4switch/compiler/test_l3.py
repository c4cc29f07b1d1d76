"""A real IPv4 router program on real packets: exact output bytes."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.runtime import Entry

PREFIX = "L3Ingress."


def udp_frame(dst: str = "10.1.2.3", ttl: int = 64, payload: bytes = b"hello") -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") /
                 IP(src="192.0.2.1", dst=dst, ttl=ttl, id=7) / UDP(sport=1234, dport=80) /
                 payload)


def expected(frame: bytes, dmac: str, ttl: int) -> bytes:
    pkt = Ether(frame)
    pkt.src, pkt.dst = pkt.dst, dmac
    pkt[IP].ttl = ttl
    del pkt[IP].chksum  # scapy recomputes it
    return bytes(pkt)


def router(switch):
    sw = switch("l3.p4")
    sw.table(PREFIX + "ipv4_lpm").insert(Entry(
        keys=(FieldMatch("lpm", value=0x0A010000, prefix_len=16),),
        action=ActionCall(PREFIX + "forward", (3, 0x0A0B0C0D0E0F))))
    sw.table(PREFIX + "ipv4_lpm").insert(Entry(
        keys=(FieldMatch("lpm", value=0x0A010200, prefix_len=24),),
        action=ActionCall(PREFIX + "forward", (4, 0x020000000004))))
    return sw


def test_forwards_with_longest_prefix_ttl_and_checksum(switch):
    sw = router(switch)
    frame = udp_frame("10.1.9.9")
    assert sw.send(1, frame) == [(3, expected(frame, "0a:0b:0c:0d:0e:0f", 63))]
    frame = udp_frame("10.1.2.3", ttl=9)
    assert sw.send(2, frame) == [(4, expected(frame, "02:00:00:00:00:04", 8))]


def test_drops_miss_ttl_one_and_bad_checksum(switch):
    sw = router(switch)
    assert sw.send(1, udp_frame("11.0.0.1")) == []
    assert sw.send(1, udp_frame("10.1.9.9", ttl=1)) == []
    bad = bytearray(udp_frame("10.1.9.9"))
    bad[24] ^= 0xFF  # IPv4 header checksum
    assert sw.send(1, bytes(bad)) == []


def test_non_ip_frames_are_dropped_and_payload_is_kept(switch):
    sw = router(switch)
    arp = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", type=0x0806) / (b"\x00" * 28))
    assert sw.send(1, arp) == []
    long_payload = bytes(range(256)) * 4
    frame = udp_frame("10.1.2.3", payload=long_payload)
    out = sw.send(1, frame)
    assert out == [(4, expected(frame, "02:00:00:00:00:04", 63))]
    assert out[0][1].endswith(long_payload)


def test_counters_count_packets_and_ingress_bytes(switch):
    sw = router(switch)
    frame = udp_frame("10.1.2.3")
    for _ in range(3):
        sw.send(5, frame)
    sw.send(6, udp_frame("11.0.0.1"))
    assert sw.state.counters[PREFIX + "rx"].read(5) == (3, 3 * len(frame))
    assert sw.state.counters[PREFIX + "rx"].read(6)[0] == 1
    hit = sw.table(PREFIX + "ipv4_lpm").lookup((0x0A010203,))
    assert hit.direct_counter == [3, 3 * len(frame)]
    # the generated code counts into the counter's own lists: a reset (counter_reset,
    # RuntimeState.reset) clears them in place, and counting goes on from zero
    sw.state.counters[PREFIX + "rx"].reset()
    sw.send(5, frame)
    assert sw.state.counters[PREFIX + "rx"].read(5) == (1, len(frame))
    assert sw.state.counters[PREFIX + "rx"].read(6) == (0, 0)


def test_default_action_change_takes_effect(switch):
    sw = router(switch)
    sw.table(PREFIX + "ipv4_lpm").set_default(ActionCall(PREFIX + "forward", (7, 0x1)))
    frame = udp_frame("11.0.0.1")
    assert sw.send(1, frame) == [(7, expected(frame, "00:00:00:00:00:01", 63))]


def test_trace_log(switch):
    if switch.keywords.get("pipeline") == "c":
        pytest.skip("the C data plane does not trace: a tracing switch runs the Python one")
    sw = router(switch)
    frame = udp_frame("10.1.2.3")
    sw.send(1, frame)
    assert sw.logs == [
        f"ingress: port 1, {len(frame)} bytes, instance_type 0",
        "table L3Ingress.ipv4_lpm: hit, action L3Ingress.forward",
        "end of ingress: egress_spec 4, priority 0",
        f"egress: port 4, transmit {len(frame)} bytes",
    ]
