"""varbit fields (IPv4 options) and header unions."""

from __future__ import annotations

from scapy.layers.inet import ICMP, IP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.l2 import Ether


def frame(options, l4) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") /
                 IP(src="10.0.0.1", dst="10.0.0.2", ttl=10, options=options) / l4 / b"data")


def expected(raw: bytes, ether_type: int | None = None) -> bytes:
    pkt = Ether(raw)
    pkt[IP].ttl -= 1
    del pkt[IP].chksum
    if ether_type is not None:
        pkt.type = ether_type
    return bytes(pkt)


def test_options_of_any_length_are_parsed_checked_and_rewritten(switch):
    sw = switch("options.p4")
    for options in ([], [IPOption_NOP()] * 4, [IPOption_RR(routers=["1.2.3.4"] * 9)]):
        raw = frame(options, UDP(sport=1, dport=2))
        assert sw.send(0, raw) == [(1, expected(raw, 0x88B5))]


def test_bad_checksum_with_options_is_detected(switch):
    sw = switch("options.p4")
    raw = bytearray(frame([IPOption_NOP()] * 4, UDP()))
    raw[14 + 20] ^= 0xFF  # an option byte, covered by the checksum
    assert sw.send(0, bytes(raw)) == []


def test_union_member_set_valid_invalidates_the_other(switch):
    sw = switch("options.p4")
    raw = frame([], ICMP(type=8, code=0, chksum=0x1234) / b"")
    ((_, out),) = sw.send(0, raw)
    pkt = Ether(out)
    assert pkt.type == 0x88B5
    # the program's 4-byte ICMP header was replaced by a zeroed UDP header (8 bytes) with
    # ports 7/7; scapy's ICMP id and seq (4 zero bytes) were payload
    ip_len = (out[14] & 0xF) * 4
    l4 = out[14 + ip_len:14 + ip_len + 8]
    assert l4 == bytes([0, 7, 0, 7, 0, 0, 0, 0])
    assert out[14 + ip_len + 8:] == b"\x00\x00\x00\x00data"
    assert out[14 + 9] == 17  # protocol
