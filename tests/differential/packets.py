"""The frames both targets get: RoCEv2 (with and without the DLB reorder tag), PFC, TTL edge
cases, bad IPv4 checksums, truncated frames, plain UDP and other traffic the lab sees.

Addresses are those of `rig.fabric()`'s switch leaf0: port 1 faces h0n0 (10.0.0.1), ports 2, 3
(and 4 with three spines) the spines; h1n0 (10.0.1.1) is reached over the ECMP group of those.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from traffic.frames import Endpoints, build_frame
from traffic.headers import ACK, SEND_ONLY, TAG_FLAG_HOST, TAG_FLAG_SWITCH, WRITE_ONLY
from traffic.pfc import build_pause
from traffic.wire import BTH_LEN, ETH_LEN, IPV4_LEN, TAG_LEN, UDP_LEN

H0_MAC, H0_IP = "02:00:0a:00:00:01", "10.0.0.1"
H1_MAC, H1_IP = "02:00:0a:00:01:01", "10.0.1.1"
LEAF_HOST_PORT_MAC = "02:53:00:01:00:01"  # leaf0 port 1
SPINE0_MAC = "02:53:00:03:00:01"  # spine0's port towards leaf0


@dataclass(frozen=True)
class Case:
    """Frames sent one after the other into `port` of both switches."""

    name: str
    port: int
    frames: tuple[bytes, ...]
    emits: int | None = None  # frames both targets must emit, where the programs say so
    punts: int = 0  # packet-ins both targets must send the controller


def roce(sport: int, *, psn: int = 0, payload: int = 64, src: str = H0_IP, dst: str = H1_IP,
         src_mac: str = H0_MAC, dst_mac: str = LEAF_HOST_PORT_MAC, opcode: int = SEND_ONLY,
         tag: tuple[int, int] | None = None, tag_flags: int = TAG_FLAG_HOST,
         ecn: int = 2, dscp: int = 26) -> bytes:
    ep = Endpoints(src_mac, dst_mac, src, dst, sport, dqpn=0x11, dscp=dscp, ecn=ecn)
    return build_frame(ep, opcode, psn, bytes(range(payload % 256)) * (payload // 256)
                       + bytes(range(payload % 256)), dlen=payload, tag=tag,
                       tag_flags=tag_flags)


def udp(sport: int, dport: int = 5000, *, dst: str = H1_IP, ttl: int = 64, size: int = 0,
        ip_flags: int = 0, port: int = 1) -> bytes:
    src_mac, dst_mac = (H0_MAC, LEAF_HOST_PORT_MAC) if port == 1 else (SPINE0_MAC, "02:53:00:01:00:02")
    frame = bytes(Ether(src=src_mac, dst=dst_mac) / IP(src=H0_IP, dst=dst, ttl=ttl, id=sport,
                                                       flags=ip_flags)
                  / UDP(sport=sport, dport=dport) / b"plain-udp")
    return frame.ljust(size, b"\x00")


def with_ttl(frame: bytes, ttl: int) -> bytes:
    return _patch_ip(frame, 8, bytes([ttl]))


def bad_checksum(frame: bytes) -> bytes:
    ip = frame[ETH_LEN:ETH_LEN + IPV4_LEN]
    wrong = (int.from_bytes(ip[10:12], "big") ^ 0x5A5A).to_bytes(2, "big")
    return frame[:ETH_LEN + 10] + wrong + frame[ETH_LEN + 12:]


def _patch_ip(frame: bytes, offset: int, value: bytes) -> bytes:
    """Change IPv4 header bytes and recompute the header checksum."""
    ip = bytearray(frame[ETH_LEN:ETH_LEN + IPV4_LEN])
    ip[offset:offset + len(value)] = value
    ip[10:12] = b"\x00\x00"
    total = sum(struct.unpack("!10H", ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip[10:12] = (~total & 0xFFFF).to_bytes(2, "big")
    return frame[:ETH_LEN] + bytes(ip) + frame[ETH_LEN + IPV4_LEN:]


def with_ip_options(frame: bytes) -> bytes:
    """IHL 6 (one word of options): the parser's `verify(ihl == 5)` fails."""
    ip = bytearray(frame[ETH_LEN:ETH_LEN + IPV4_LEN]) + b"\x01\x01\x01\x00"  # NOP NOP NOP EOL
    ip[0] = 0x46
    ip[2:4] = (int.from_bytes(ip[2:4], "big") + 4).to_bytes(2, "big")
    ip[10:12] = b"\x00\x00"
    total = sum(struct.unpack("!12H", ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip[10:12] = (~total & 0xFFFF).to_bytes(2, "big")
    return frame[:ETH_LEN] + bytes(ip) + frame[ETH_LEN + IPV4_LEN:]


def mac_control(opcode: int, body: bytes = b"") -> bytes:
    frame = bytes.fromhex("0180c2000001") + bytes.fromhex(H0_MAC.replace(":", "")) \
        + b"\x88\x08" + struct.pack("!H", opcode) + body
    return frame.ljust(60, b"\x00")


FLOWS = (49152, 49153, 49200, 50001, 51234, 60001)
MANY_FLOWS = tuple(range(52000, 52000 + 40 * 37, 37))  # spread over every member and hash bit
BTH_END = ETH_LEN + IPV4_LEN + UDP_LEN + BTH_LEN


def cases() -> list[Case]:
    """Every case, in the order it is sent (switch state such as per-flow registers carries
    over from one case to the next, identically on both targets)."""
    rocev2 = roce(FLOWS[0])
    tagged = roce(FLOWS[1], tag=(7, 0))
    return [
        Case("rocev2-flows", 1, tuple(roce(s, psn=p) for p in range(3) for s in FLOWS), 18),
        Case("rocev2-many-flows", 1, tuple(roce(s) for s in MANY_FLOWS), len(MANY_FLOWS)),
        Case("rocev2-write-and-ack", 1, (roce(FLOWS[2], opcode=WRITE_ONLY, payload=256),
                                         roce(FLOWS[2], opcode=ACK, payload=0))),
        Case("rocev2-large", 1, (roce(FLOWS[3], payload=1400),)),
        Case("rocev2-tagged-by-host", 1, tuple(roce(FLOWS[1], psn=p, tag=(7, p))
                                               for p in range(4))),
        Case("rocev2-tagged-by-switch", 1, (roce(FLOWS[4], tag=(9, 3),
                                                 tag_flags=TAG_FLAG_SWITCH),)),
        Case("rocev2-from-spine", 2, tuple(
            roce(s, src=H1_IP, dst=H0_IP, src_mac=SPINE0_MAC, dst_mac="02:53:00:01:00:02")
            for s in FLOWS[:3])),
        Case("rocev2-tagged-from-spine", 2, (
            roce(FLOWS[0], src=H1_IP, dst=H0_IP, src_mac=SPINE0_MAC,
                 dst_mac="02:53:00:01:00:02", tag=(5, 1), tag_flags=TAG_FLAG_SWITCH),)),
        Case("rocev2-ecn-ce-and-not-ect", 1, (roce(FLOWS[0], ecn=3), roce(FLOWS[0], ecn=0))),
        Case("pfc-pause-and-resume", 1, (build_pause(H0_MAC, {3: 0xFFFF}),
                                         build_pause(H0_MAC, {3: 0}),
                                         build_pause(H0_MAC, dict.fromkeys(range(8), 100))), 0),
        Case("pfc-from-spine", 2, (build_pause(SPINE0_MAC, {0: 10, 7: 20}),)),
        Case("mac-control-pause-not-pfc", 1, (mac_control(0x0001, b"\xff\xff"),)),
        Case("pfc-unpadded", 1, (build_pause(H0_MAC, {1: 1})[:ETH_LEN + 18],)),
        Case("ttl", 1, tuple(with_ttl(rocev2, t) for t in (2, 1, 0, 255)), 2),
        Case("ttl-udp", 1, tuple(udp(40000 + t, ttl=t) for t in (2, 1, 0))),
        Case("bad-ipv4-checksum", 1, (bad_checksum(rocev2), bad_checksum(udp(40100)),
                                      bad_checksum(tagged)), 3),
        Case("ipv4-options", 1, (with_ip_options(rocev2), with_ip_options(udp(40200)))),
        Case("plain-udp", 1, tuple(udp(s) for s in (1000, 2000, 3000, 4000)), 4),
        Case("udp-to-host-port", 2, (udp(40300, dst=H0_IP, port=2),)),
        Case("udp-min-size-padded", 1, (udp(40400, size=60), udp(40401, size=1514))),
        Case("ipv4-fragment", 1, (udp(40500, ip_flags=1),)),
        Case("unknown-destination", 1, (udp(40600, dst="10.9.9.9"),
                                        roce(FLOWS[0], dst="192.168.0.1"))),
        Case("truncated-ethernet", 1, (rocev2[:ETH_LEN], rocev2[:ETH_LEN + 1])),
        Case("truncated-ipv4", 1, (rocev2[:ETH_LEN + 10], rocev2[:ETH_LEN + IPV4_LEN - 1])),
        Case("truncated-udp", 1, (rocev2[:ETH_LEN + IPV4_LEN + 4],
                                  udp(40700)[:ETH_LEN + IPV4_LEN + 7])),
        Case("truncated-bth", 1, (rocev2[:ETH_LEN + IPV4_LEN + UDP_LEN + 6],
                                  rocev2[:BTH_END - 1], rocev2[:BTH_END])),
        Case("truncated-dlb-tag", 1, (tagged[:ETH_LEN + IPV4_LEN + 4],
                                      tagged[:ETH_LEN + IPV4_LEN + TAG_LEN + 3])),
        Case("truncated-pfc", 1, (build_pause(H0_MAC, {2: 5})[:ETH_LEN + 1],
                                  build_pause(H0_MAC, {2: 5})[:ETH_LEN + 9])),
        Case("arp-and-ipv6", 1, (bytes(Ether(src=H0_MAC, dst="ff:ff:ff:ff:ff:ff")
                                       / ARP(psrc=H0_IP, pdst=H1_IP)),
                                 bytes.fromhex("333300000001" + H0_MAC.replace(":", "") + "86dd")
                                 + bytes(40))),
    ]
