"""RoCEv2 frames: built once with scapy, then patched per packet; ICRC computed with zlib.

`build_frame` is the readable (slow) path used for templates, ACKs, CNPs and tests.
`FrameTemplate` holds one built frame as a bytearray and rewrites only the fields that change
per packet (PSN, ACK-request bit, tag sequence, send timestamp, ICRC), which keeps the sender's
hot loop free of scapy.

ICRC (IBA annex A17): CRC-32 over 8 bytes of 0xFF (the pseudo-LRH), the IPv4 header with TOS,
TTL and checksum set to all ones, the UDP header with its checksum set to all ones, the BTH with
its FECN/BECN/reserved byte set to all ones, and the payload; stored least-significant byte
first. With the reorder tag present the ICRC covers the untagged packet (protocol 17, IPv4 length
without the tag), because the receiver strips the tag before verifying.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from traffic.headers import (
    ACK,
    AETH,
    BTH,
    CNP,
    INT_IP_PROTO,
    RETH,
    RETH_OPCODES,
    ROCE_UDP_PORT,
    TAG_FLAG_HOST,
    TAG_IP_PROTO,
    CNPPadding,
)
from traffic.wire import (
    BTH_ACKREQ_AT,
    BTH_FECN_AT,
    BTH_LEN,
    ETH_LEN,
    ICRC_LEN,
    INT_SHIM,
    INT_SHIM_LEN,
    IP_HEADER,
    IP_IHL_MASK,
    IP_PROTO_AT,
    IPV4,
    PLAIN,
    RETH_LEN,
    TAG,
    TAG_LEN,
    TAGGED,
    UDP_HDR,
    UDP_LEN,
    int_shim_len,
)

ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3
STAMP_LEN = 8  # send timestamp (ns, big-endian) in the first payload bytes of a message
_PSEUDO_LRH = b"\xff" * 8


@dataclass(frozen=True)
class Endpoints:
    """Addressing of one direction of a queue pair."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    sport: int  # UDP source port: the flow entropy ECMP hashes on
    dqpn: int
    dscp: int = 26
    ecn: int = ECN_ECT0


def build_frame(
    ep: Endpoints,
    opcode: int,
    psn: int = 0,
    payload: bytes = b"",
    *,
    dlen: int = 0,
    va: int = 0,
    rkey: int = 0,
    ackreq: bool = False,
    tag: tuple[int, int] | None = None,
    tag_flags: int = TAG_FLAG_HOST,
    becn: bool = False,
    syndrome: int = 0,
    msn: int = 0,
    int_hops: int = 0,
) -> bytes:
    """A complete frame (no FCS) with a correct ICRC; `tag` = (flow_id, seq) adds the reorder
    tag, `int_hops` > 0 the INT shim asking for that many records (after the tag)."""
    bth = BTH(opcode=opcode, dqpn=ep.dqpn, psn=psn & 0xFFFFFF, ackreq=int(ackreq), becn=int(becn))
    if opcode in RETH_OPCODES:
        bth = bth / RETH(va=va, rkey=rkey, dlen=dlen)
    elif opcode == ACK:
        bth = bth / AETH(syndrome=syndrome, msn=msn)
    elif opcode == CNP:
        bth = bth / CNPPadding()
    if payload:
        bth = bth / payload
    ip = IP(src=ep.src_ip, dst=ep.dst_ip, tos=(ep.dscp << 2) | ep.ecn, ttl=64, id=0, flags="DF")
    # UDP checksum 0 (allowed on IPv4, as RoCE NICs send) keeps per-packet patching cheap.
    l4 = UDP(sport=ep.sport, dport=ROCE_UDP_PORT, chksum=0) / bth
    plain = bytes(Ether(src=ep.src_mac, dst=ep.dst_mac) / ip / l4)
    if int_hops:
        plain = add_int_shim(plain, int_hops)
    if tag is None:
        return plain
    return add_tag(plain, tag[0], tag[1], tag_flags)


# Within the IPv4 header (its options, if any, follow these).
_IP_TOS, _IP_TTL, _IP_PROTO = IPV4["tos"].at, IPV4["ttl"].at, IPV4["proto"].at
_IP_LEN, _IP_CHKSUM = IPV4["len"].span, IPV4["chksum"].span
_UDP_CHKSUM = UDP_HDR["chksum"].span
_TAG_SEQ = TAG["seq"].span
# next_proto, flags, flow_id, seq: whole-byte fields back to back, packed in one call
_TAG_STRUCT = struct.Struct("!" + "".join({1: "B", 2: "H", 4: "I"}[f.size] for f in TAG.fields.values()))
# next_proto, flags, max_hops, hop_count: the INT shim's fixed part
_INT_STRUCT = struct.Struct("!" + "".join({1: "B", 2: "H"}[f.size] for f in INT_SHIM.fields.values()))
# The ICRC's masked headers end with BTH's first 8 bytes; the ACK-request byte and on are
# covered as they are (with the payload).
_BTH_MASKED = BTH_ACKREQ_AT


def _ihl_bytes(frame: bytes | bytearray | memoryview) -> int:
    return (frame[ETH_LEN] & IP_IHL_MASK) * 4


def add_tag(frame: bytes | bytearray, flow_id: int, seq: int, flags: int = TAG_FLAG_HOST) -> bytes:
    """Insert the reorder tag after the IPv4 header (protocol -> 253, length += 8)."""
    ihl = _ihl_bytes(frame)
    ip = bytearray(frame[ETH_LEN : ETH_LEN + ihl])
    proto = ip[_IP_PROTO]
    ip[_IP_PROTO] = TAG_IP_PROTO
    ip[_IP_LEN] = (int.from_bytes(ip[_IP_LEN], "big") + TAG_LEN).to_bytes(2, "big")
    set_ipv4_checksum(ip)
    shim = _TAG_STRUCT.pack(proto, flags, flow_id & 0xFFFF, seq & 0xFFFFFFFF)
    return bytes(frame[:ETH_LEN]) + bytes(ip) + shim + frame[ETH_LEN + ihl :]


def add_int_shim(frame: bytes | bytearray, max_hops: int) -> bytes:
    """Ask for in-band telemetry: the INT shim (no records yet) after the IPv4 header, or after
    the reorder tag if the frame has one (protocol chain and IPv4 length updated)."""
    if not 0 < max_hops < 256:
        raise ValueError(f"INT records asked for must be 1..255, got {max_hops}")
    ihl = _ihl_bytes(frame)
    ip = bytearray(frame[ETH_LEN : ETH_LEN + ihl])
    at = ETH_LEN + ihl
    if ip[_IP_PROTO] == TAG_IP_PROTO:
        before = bytearray(frame[at : at + TAG_LEN])
        proto, before[0] = before[0], INT_IP_PROTO  # the tag's next_proto
        at += TAG_LEN
    else:
        before = bytearray()
        proto, ip[_IP_PROTO] = ip[_IP_PROTO], INT_IP_PROTO
    ip[_IP_LEN] = (int.from_bytes(ip[_IP_LEN], "big") + INT_SHIM_LEN).to_bytes(2, "big")
    set_ipv4_checksum(ip)
    shim = _INT_STRUCT.pack(proto, 0, max_hops, 0)  # no flags, no records yet
    return bytes(frame[:ETH_LEN]) + bytes(ip) + bytes(before) + shim + bytes(frame[at:])


def strip_tag(frame: bytes) -> bytes:
    """Remove the reorder tag, restoring the IPv4 protocol and length; untagged frames pass."""
    ihl = _ihl_bytes(frame)
    if frame[ETH_LEN + _IP_PROTO] != TAG_IP_PROTO:
        return bytes(frame)
    ip = bytearray(frame[ETH_LEN : ETH_LEN + ihl])
    ip[_IP_PROTO] = frame[ETH_LEN + ihl]  # the tag's next_proto
    ip[_IP_LEN] = (int.from_bytes(ip[_IP_LEN], "big") - TAG_LEN).to_bytes(2, "big")
    set_ipv4_checksum(ip)
    return bytes(frame[:ETH_LEN]) + bytes(ip) + bytes(frame[ETH_LEN + ihl + TAG_LEN :])


def set_ipv4_checksum(ip: bytearray) -> None:
    ip[_IP_CHKSUM] = b"\x00\x00"
    total = sum(struct.unpack(f"!{len(ip) // 2}H", ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip[_IP_CHKSUM] = (~total & 0xFFFF).to_bytes(2, "big")


def _masked_headers(frame: bytes | bytearray | memoryview) -> tuple[bytes, int]:
    """Pseudo-LRH + masked IPv4/UDP/BTH[0:8] of the packet without tag and INT shim, and where
    BTH byte 8 is."""
    ihl = _ihl_bytes(frame)
    ip = bytearray(frame[ETH_LEN : ETH_LEN + ihl])
    l4 = ETH_LEN + ihl
    if ip[_IP_PROTO] == TAG_IP_PROTO:
        ip[_IP_PROTO] = frame[l4]  # the tag's next_proto
        ip[_IP_LEN] = (int.from_bytes(ip[_IP_LEN], "big") - TAG_LEN).to_bytes(2, "big")
        l4 += TAG_LEN
    if ip[_IP_PROTO] == INT_IP_PROTO:  # the INT shim and its records: not covered either
        shim = int_shim_len(frame, l4)
        ip[_IP_PROTO] = frame[l4]
        ip[_IP_LEN] = (int.from_bytes(ip[_IP_LEN], "big") - shim).to_bytes(2, "big")
        l4 += shim
    ip[_IP_TOS] = 0xFF  # TOS (DSCP + ECN)
    ip[_IP_TTL] = 0xFF
    ip[_IP_CHKSUM] = b"\xff\xff"
    udp = bytearray(frame[l4 : l4 + UDP_LEN])
    udp[_UDP_CHKSUM] = b"\xff\xff"
    bth = bytearray(frame[l4 + UDP_LEN : l4 + UDP_LEN + _BTH_MASKED])
    bth[BTH_FECN_AT] = 0xFF  # FECN, BECN, reserved
    return _PSEUDO_LRH + bytes(ip) + bytes(udp) + bytes(bth), l4 + UDP_LEN + _BTH_MASKED


def compute_icrc(frame: bytes | bytearray | memoryview) -> bytes:
    """The four ICRC bytes a frame (tagged or not) should end with; its own trailing four
    bytes are the ICRC field and are not covered."""
    head, rest = _masked_headers(frame)
    return zlib.crc32(memoryview(frame)[rest:-ICRC_LEN], zlib.crc32(head)).to_bytes(4, "little")


def frame_icrc(frame: bytes | bytearray | memoryview) -> bytes:
    """The ICRC bytes carried in the frame's last four bytes."""
    return bytes(frame[-ICRC_LEN:])


def icrc_ok(frame: bytes | bytearray | memoryview) -> bool:
    return compute_icrc(frame) == frame_icrc(frame)


class FrameTemplate:
    """One prebuilt data frame whose per-packet fields are patched in place.

    `render()` returns the template's own bytearray: send it before rendering the next packet.
    """

    __slots__ = ("_head_crc", "_icrc_at", "_rest", "_stamp_at", "_tag_at", "buf", "payload_at",
                 "psn_at")

    def __init__(self, frame: bytes, *, stamped: bool) -> None:
        self.buf = bytearray(frame)
        head, rest = _masked_headers(self.buf)
        self._head_crc = zlib.crc32(head)
        self._rest = rest
        self.psn_at = rest  # BTH byte 8: ackreq bit + reserved, then the 24-bit PSN
        self._icrc_at = len(self.buf) - ICRC_LEN
        ihl = _ihl_bytes(self.buf)
        tagged = self.buf[ETH_LEN + _IP_PROTO] == TAG_IP_PROTO
        self._tag_at = ETH_LEN + ihl + _TAG_SEQ.start if tagged else -1
        bth = rest - _BTH_MASKED
        payload_at = bth + BTH_LEN + (RETH_LEN if self.buf[bth] in RETH_OPCODES else 0)
        self.payload_at = payload_at
        if stamped and self._icrc_at - payload_at < STAMP_LEN:
            raise ValueError("a stamped frame needs at least 8 payload bytes")
        self._stamp_at = payload_at if stamped else -1

    @property
    def payload_len(self) -> int:
        return self._icrc_at - self.payload_at

    def render(self, psn: int, ackreq: bool = False, seq: int = 0, stamp_ns: int = 0,
               payload: bytes | bytearray | None = None) -> bytearray:
        """`payload`: new payload bytes (payload_len of them), written before the stamp."""
        buf = self.buf
        if payload is not None:
            buf[self.payload_at : self._icrc_at] = payload
        at = self.psn_at
        buf[at : at + 4] = ((psn & 0xFFFFFF) | (0x80000000 if ackreq else 0)).to_bytes(4, "big")
        if self._tag_at >= 0:
            buf[self._tag_at : self._tag_at + 4] = (seq & 0xFFFFFFFF).to_bytes(4, "big")
        if self._stamp_at >= 0:
            buf[self._stamp_at : self._stamp_at + STAMP_LEN] = stamp_ns.to_bytes(STAMP_LEN, "big")
        end = self._icrc_at
        crc = zlib.crc32(memoryview(buf)[self._rest : end], self._head_crc)
        buf[end:] = crc.to_bytes(4, "little")
        return buf


_CACHED_L4 = UDP_LEN + _BTH_MASKED  # UDP and BTH up to the ACK-request byte: fixed per flow
_PLAIN_REST, _TAGGED_REST = PLAIN.udp + _CACHED_L4, TAGGED.udp + _CACHED_L4
_PLAIN_KEY = slice(IP_HEADER.start, _PLAIN_REST)  # IPv4 header through BTH byte 8, untagged
_TAGGED_L4 = slice(TAGGED.udp, _TAGGED_REST)


class IcrcChecker:
    """Fast ICRC verification of received frames (IPv4 without options, tagged or not): the
    masked headers up to BTH byte 8 repeat within a flow, so their CRC is cached."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._heads: dict[bytes, int] = {}
        self._max = max_entries

    def ok(self, frame: bytes | bytearray | memoryview) -> bool:
        if frame[IP_PROTO_AT] == TAG_IP_PROTO:  # the key leaves the tag out
            rest = _TAGGED_REST
            key = b"".join((frame[IP_HEADER], frame[_TAGGED_L4]))
        else:
            rest = _PLAIN_REST
            key = bytes(frame[_PLAIN_KEY])
        head = self._heads.get(key)
        if head is None:
            masked, _ = _masked_headers(frame)
            head = zlib.crc32(masked)
            if len(self._heads) >= self._max:
                self._heads.clear()
            self._heads[key] = head
        crc = zlib.crc32(memoryview(frame)[rest:-ICRC_LEN], head)
        return crc == int.from_bytes(frame[-ICRC_LEN:], "little")
