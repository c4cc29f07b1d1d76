"""Byte layout of the lab's frames, computed at import time from the scapy layer declarations.

The fast paths (sender, receiver, impairment relay, frame templates, BPF filters, PFC parsing)
read and patch frames with plain slices and `int.from_bytes`; the offsets they use come from
here, derived by walking each layer's `fields_desc` (scapy's declaration of the header), so in
Python the layout is written once: in the scapy layers (scapy's own and `traffic.headers`).
`p4src/include` declares the same headers for the switches' parser.

Two RoCEv2 layouts exist on the wire, without and with the 8-byte reorder tag between IPv4 and
UDP: `PLAIN` and `TAGGED` hold the absolute offsets of each; `roce_layout(frame)` picks one.
IPv4 is assumed without options (IHL 5), as everything the lab sends; `IPV4_NO_OPTIONS` is the
first IPv4 byte such frames carry.
"""

from __future__ import annotations

from typing import NamedTuple

from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.fields import Field, FieldListField, TrailerField, _BitField, _FieldContainer, _StrField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from traffic.headers import AETH, BTH, RETH, TAG_IP_PROTO, CNPPadding, IntHop, IntShim, ReorderTag


class FieldAt(NamedTuple):
    """Where one header field sits, relative to the start of its header."""

    at: int  # first byte holding the field
    size: int  # bytes spanned
    shift: int  # right shift of the field's value within those bytes (bit fields)
    mask: int  # the field's bits within those bytes, unshifted

    @property
    def end(self) -> int:
        return self.at + self.size

    @property
    def span(self) -> slice:
        return slice(self.at, self.end)

    def read(self, data: bytes | bytearray | memoryview, base: int = 0) -> int:
        """The field's value in a header starting at `base` (readable, not for hot loops)."""
        raw = int.from_bytes(data[base + self.at : base + self.end], "big")
        return (raw & self.mask) >> self.shift


class Layout:
    """Fixed part of one header: its length and each field's position, from `fields_desc`.

    The walk stops at the first variable-length field (IPv4 options), so `length` is the header
    without them. A trailer field (BTH's ICRC) is not part of the header: it ends the frame and
    is listed in `trailers` with its size.
    """

    def __init__(self, layer: type[Packet]) -> None:
        self.name = layer.__name__
        self.fields: dict[str, FieldAt] = {}
        self.trailers: dict[str, int] = {}
        bits = 0
        for field in layer.fields_desc:
            if isinstance(field, TrailerField):
                self.trailers[field.name] = int(field.fld.sz)
                continue
            inner = field.fld if isinstance(field, _FieldContainer) else field
            if isinstance(inner, _BitField):
                width = inner.size
            elif isinstance(inner, (_StrField, FieldListField)) or not isinstance(inner, Field):
                break  # variable length: the fixed header ends here
            else:
                width = int(inner.sz) * 8
            first, end = bits // 8, -(-(bits + width) // 8)
            shift = end * 8 - bits - width
            self.fields[field.name] = FieldAt(first, end - first, shift, ((1 << width) - 1) << shift)
            bits += width
        if bits % 8:
            raise ValueError(f"{self.name}: fixed header of {bits} bits is not whole bytes")
        self.length = bits // 8

    def __getitem__(self, name: str) -> FieldAt:
        return self.fields[name]

    def __repr__(self) -> str:
        return f"Layout({self.name}, {self.length} B, {list(self.fields)})"


ETHER = Layout(Ether)
IPV4 = Layout(IP)
UDP_HDR = Layout(UDP)
TAG = Layout(ReorderTag)
BTH_HDR = Layout(BTH)
RETH_HDR = Layout(RETH)
AETH_HDR = Layout(AETH)
CNP_PAD = Layout(CNPPadding)
PFC = Layout(MACControlClassBasedFlowControl)
INT_SHIM = Layout(IntShim)  # the fixed part: next_proto, flags, max_hops, hop_count
INT_HOP = Layout(IntHop)

ETH_LEN = ETHER.length
IPV4_LEN = IPV4.length
UDP_LEN = UDP_HDR.length
TAG_LEN = TAG.length
BTH_LEN = BTH_HDR.length
RETH_LEN = RETH_HDR.length
AETH_LEN = AETH_HDR.length
CNP_PAD_LEN = CNP_PAD.length
ICRC_LEN = BTH_HDR.trailers["icrc"]
PFC_LEN = PFC.length
INT_SHIM_LEN = INT_SHIM.length
INT_HOP_LEN = INT_HOP.length

# Ethernet, absolute.
ETH_DST = ETHER["dst"].span
ETH_SRC = ETHER["src"].span
ETH_TYPE = ETHER["type"].span
ETH_TYPE_AT = ETHER["type"].at

# IPv4 without options, absolute (the header itself is IP_HEADER).
IP_AT = ETH_LEN
IP_HEADER = slice(IP_AT, IP_AT + IPV4_LEN)
IP_VER_IHL_AT = IP_AT + IPV4["version"].at  # version and IHL share this byte
IP_IHL_MASK = IPV4["ihl"].mask
IPV4_NO_OPTIONS = (4 << IPV4["version"].shift) | (IPV4_LEN // 4 << IPV4["ihl"].shift)
IP_TOS_AT = IP_AT + IPV4["tos"].at
ECN_MASK = 0x03  # the two low bits of the TOS byte (RFC 3168)
IP_LEN = slice(IP_AT + IPV4["len"].at, IP_AT + IPV4["len"].end)
IP_TTL_AT = IP_AT + IPV4["ttl"].at
IP_PROTO_AT = IP_AT + IPV4["proto"].at
IP_CHKSUM = slice(IP_AT + IPV4["chksum"].at, IP_AT + IPV4["chksum"].end)
IP_SRC = slice(IP_AT + IPV4["src"].at, IP_AT + IPV4["src"].end)
IP_DST = slice(IP_AT + IPV4["dst"].at, IP_AT + IPV4["dst"].end)
IP_ADDRS = slice(IP_SRC.start, IP_DST.stop)  # source and destination together
if IP_DST.start != IP_SRC.stop:
    raise ValueError("IPv4 source and destination are expected back to back")

# The reorder tag (when IPv4 protocol is TAG_IP_PROTO), absolute.
TAG_AT = IP_AT + IPV4_LEN
TAG_FLAGS_AT = TAG_AT + TAG["flags"].at
TAG_SEQ = slice(TAG_AT + TAG["seq"].at, TAG_AT + TAG["seq"].end)

# Within BTH: the ICRC masks the FECN/BECN byte; frame templates patch the ACK-request bit and
# the PSN as one 32-bit word.
BTH_OPCODE_AT = BTH_HDR["opcode"].at
BTH_FECN_AT = BTH_HDR["fecn"].at
BTH_ACKREQ_AT = BTH_HDR["ackreq"].at
BTH_ACKREQ_MASK = BTH_HDR["ackreq"].mask
if BTH_HDR["psn"].end - BTH_ACKREQ_AT != 4:
    raise ValueError("BTH: the ACK-request bit and the PSN are expected in one 32-bit word")

# PFC (MAC control class-based flow control), absolute.
PFC_OPCODE_AT = ETH_LEN + PFC["_op_code"].at
PFC_ENABLE_AT = ETH_LEN + PFC["c0_enabled"].at  # c7..c0 enable bits, c0 the lowest
PFC_TIMES_AT = ETH_LEN + PFC["c0_pause_time"].at  # c0..c7 pause times, 16 bits each
if [PFC[f"c{p}_pause_time"].at for p in range(8)] != [PFC["c0_pause_time"].at + 2 * p for p in range(8)]:
    raise ValueError("PFC: pause times c0..c7 are expected consecutive 16-bit fields")



def int_shim_len(frame: bytes | bytearray | memoryview, at: int) -> int:
    """Bytes of the INT shim starting at `at`, its records included."""
    return INT_SHIM_LEN + frame[at + INT_SHIM["hop_count"].at] * INT_HOP_LEN


class RoceLayout(NamedTuple):
    """Absolute offsets in a RoCEv2 frame (IPv4 without options), untagged or tagged."""

    tagged: bool
    udp: int  # start of UDP
    sport: slice
    dport: slice
    bth: int  # start of BTH
    opcode: int
    dqpn: slice
    ackreq: int  # the byte holding the ACK-request bit (BTH_ACKREQ_MASK)
    psn: slice
    bth_end: int  # start of RETH, AETH, CNP padding or the payload
    syndrome: int  # AETH syndrome (ACK and NAK)
    aeth_end: int
    min_len: int  # shortest RoCE frame: headers through BTH, and the ICRC


def _roce_layout(tagged: bool) -> RoceLayout:
    udp = TAG_AT + (TAG_LEN if tagged else 0)
    bth = udp + UDP_LEN

    def at(layout: Layout, name: str, base: int) -> slice:
        return slice(base + layout[name].at, base + layout[name].end)

    return RoceLayout(
        tagged=tagged, udp=udp, sport=at(UDP_HDR, "sport", udp), dport=at(UDP_HDR, "dport", udp),
        bth=bth, opcode=bth + BTH_OPCODE_AT, dqpn=at(BTH_HDR, "dqpn", bth),
        ackreq=bth + BTH_ACKREQ_AT, psn=at(BTH_HDR, "psn", bth), bth_end=bth + BTH_LEN,
        syndrome=bth + BTH_LEN + AETH_HDR["syndrome"].at, aeth_end=bth + BTH_LEN + AETH_LEN,
        min_len=bth + BTH_LEN + ICRC_LEN,
    )


PLAIN = _roce_layout(tagged=False)
TAGGED = _roce_layout(tagged=True)
# IPv4 addresses and UDP ports of an untagged frame, back to back: the flow on the wire.
PLAIN_FLOW = slice(IP_SRC.start, PLAIN.dport.stop)


def roce_layout(frame: bytes | bytearray | memoryview) -> RoceLayout:
    """The layout of a RoCEv2 frame: TAGGED if its IPv4 protocol is the reorder tag's."""
    return TAGGED if frame[IP_PROTO_AT] == TAG_IP_PROTO else PLAIN

