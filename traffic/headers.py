"""Scapy layers the lab adds to RoCEv2: RETH, the DLB reorder tag and in-band telemetry (INT),
bound into scapy's stack.

Importing this module registers the bindings, so scapy then decodes
  Ether / IP(proto 253) / ReorderTag / UDP(4791) / BTH / [RETH | AETH | CNPPadding] / payload
  Ether / IP(proto 253) / ReorderTag(next 254) / IntShim(hops=[IntHop...]) / UDP(4791) / ...
  Ether / IP(proto 254) / IntShim / UDP(4791) / ...
  Ether / IP / UDP(4791) / BTH(ACK) / AETH / IntEcho(hops=[IntHop...])   (HPCC's ACKs)
The tag is the 8-byte shim shared with the P4 programs (`p4src/include`): the original IPv4
protocol, flags (bit 0 tagged by a host, bit 1 tagged by a switch), a flow id and a per-flow
sequence number starting at 0. IPv4 total length includes it. The INT shim (`int.p4`) is 4 bytes
(next protocol, flags, max hops, hop count) followed by hop_count 24-byte records, newest first.
"""

from __future__ import annotations

import logging

from scapy.contrib.roce import AETH, BTH, CNP_OPCODE, CNPPadding
from scapy.error import log_runtime
from scapy.fields import (
    BitField,
    ByteEnumField,
    ByteField,
    FieldLenField,
    FlagsField,
    IntField,
    PacketListField,
    ShortField,
    XIntField,
    XLongField,
)
from scapy.layers.inet import IP, UDP
from scapy.packet import Packet, bind_layers

ROCE_UDP_PORT = 4791
TAG_IP_PROTO = 253  # RFC 3692 experimental
TAG_FLAG_HOST = 0x01
TAG_FLAG_SWITCH = 0x02
INT_IP_PROTO = 254  # RFC 3692 experimental (= mechanisms.int.IP_PROTO)
INT_FLAG_NO_ROOM = 0x01  # a switch found no room for its record
INT_MAX_HOPS = 5  # records a switch pushes at most (= mechanisms.int.MAX_HOPS)

# BTH opcodes (RC transport); UC adds 0x20, UD 0x60.
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = 0x00, 0x01, 0x02, 0x04
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
ACK = 0x11
CNP = CNP_OPCODE  # 0x81
UC_OFFSET = 0x20
# Header lengths and field offsets are derived from these layers in `traffic.wire`.

# Opcodes that carry a RETH (RDMA WRITE FIRST/ONLY and the ONLY-with-immediate form), RC and UC.
RETH_OPCODES = frozenset({0x06, 0x0A, 0x0B, 0x26, 0x2A, 0x2B})
FIRST_OPCODES = frozenset({0x00, 0x06, 0x20, 0x26})
LAST_OPCODES = frozenset({0x02, 0x03, 0x08, 0x09, 0x22, 0x23, 0x28, 0x29})
ONLY_OPCODES = frozenset({0x04, 0x05, 0x0A, 0x0B, 0x24, 0x25, 0x2A, 0x2B, 0x64, 0x65})
DATA_OPCODES = frozenset(range(0x00, 0x0C)) | frozenset(range(0x20, 0x2C)) | {0x64, 0x65}
STARTS_MESSAGE = FIRST_OPCODES | ONLY_OPCODES  # a message's first packet (carries its send stamp)
ENDS_MESSAGE = LAST_OPCODES | ONLY_OPCODES


class RETH(Packet):
    """RDMA Extended Transport Header: remote virtual address, key and DMA length."""

    name = "RETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dlen", 0),
    ]


class ReorderTag(Packet):
    """DLB reorder tag: shim between IPv4 and UDP, signalled by IPv4 protocol 253.

    Built with scapy (`IP()/ReorderTag()/UDP()/BTH()/...`), a RoCE packet gets the ICRC of its
    untagged form, as the receiver checks it after stripping the tag (scapy's BTH alone cannot
    see the IPv4 header through the tag).
    """

    name = "ReorderTag"
    fields_desc = [
        ByteEnumField("next_proto", 17, {17: "udp", INT_IP_PROTO: "int"}),
        FlagsField("flags", TAG_FLAG_HOST, 8, ["host", "switch", *(f"r{i}" for i in range(2, 8))]),
        ShortField("flow_id", 0),
        IntField("seq", 0),
    ]

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        if isinstance(self.payload, IntShim):  # the INT shim under it fixed the ICRC
            return p + pay
        return p + _icrc_without_shim(self, self.underlayer, pay)


class IntHop(Packet):
    """One switch's INT record (24 bytes): what HPCC needs of the link the packet left on."""

    name = "IntHop"
    fields_desc = [
        ShortField("switch_id", 0),
        ShortField("ingress_port", 0),
        ShortField("egress_port", 0),
        ShortField("qdepth", 0),  # packets left in the egress queue (deq_qdepth), saturating
        BitField("egress_ts", 0, 48),  # µs since the switch started, at dequeue
        ShortField("hop_latency", 0),  # µs queued (deq_timedelta), saturating
        IntField("tx_bytes", 0),  # bytes sent on the egress port so far, modulo 2^32
        IntField("link_mbps", 0),  # the egress link's rate (0: not configured)
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s


class IntShim(Packet):
    """INT shim after IPv4 (protocol 254) or the reorder tag: a sender asks for telemetry with
    `IntShim(max_hops=n)`; every switch pushes an `IntHop` in front of `hops` (newest first).

    Built with scapy, a RoCE packet gets the ICRC of its form without the shim (and tag), as the
    receiver checks it after stripping them."""

    name = "IntShim"
    fields_desc = [
        ByteEnumField("next_proto", 17, {17: "udp"}),
        FlagsField("flags", 0, 8, ["no_room", *(f"r{i}" for i in range(1, 8))]),
        ByteField("max_hops", 5),
        FieldLenField("hop_count", None, count_of="hops", fmt="B"),
        PacketListField("hops", [], IntHop, count_from=lambda pkt: pkt.hop_count),
    ]

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        ip = self.underlayer
        if isinstance(ip, ReorderTag):
            ip = ip.underlayer
        return p + _icrc_without_shim(self, ip, pay)


class IntEcho(IntShim):
    """INT echo in an ACK (HPCC): the shim and records of the data packet the ACK answers, as
    that packet brought them (newest record first, `next_proto` as it was), after the AETH and
    covered by the ACK's ICRC. It sits in the RoCE payload, not after IPv4: switches neither
    see nor add to it."""

    name = "IntEcho"

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        return p + pay


def _icrc_without_shim(shim: Packet, ip: Packet | None, pay: bytes) -> bytes:
    """`pay` (UDP on) with the ICRC of the packet without the shims between IPv4 and UDP."""
    bth = shim.getlayer(BTH)
    if bth is None or bth.icrc is not None or not isinstance(ip, IP) or ip.ihl not in (None, 5):
        return pay
    from traffic.frames import compute_icrc
    from traffic.wire import ICRC_LEN

    plain = ip.copy()
    plain.remove_payload()
    plain.proto, plain.len, plain.chksum = shim.next_proto, None, None
    head = bytes(14) + bytes(plain / pay)  # any Ethernet header: not covered
    return pay[:-ICRC_LEN] + compute_icrc(head)


class _TaggedIcrcNotice(logging.Filter):
    """Silence scapy's BTH warning about a shim under UDP: ReorderTag and IntShim fix that ICRC."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(f"underlayer protocol {shim}" in message for shim in ("ReorderTag", "IntShim"))


log_runtime.addFilter(_TaggedIcrcNotice())

for _op in sorted(RETH_OPCODES):
    bind_layers(BTH, RETH, opcode=_op)
bind_layers(IP, ReorderTag, proto=TAG_IP_PROTO)
bind_layers(ReorderTag, UDP, next_proto=17)
bind_layers(IP, IntShim, proto=INT_IP_PROTO)
bind_layers(ReorderTag, IntShim, next_proto=INT_IP_PROTO)
bind_layers(IntShim, UDP, next_proto=17)
bind_layers(AETH, IntEcho)  # an ACK's payload, when it has one, is the echo

__all__ = [
    "AETH",
    "BTH",
    "CNP",
    "RETH",
    "CNPPadding",
    "IntEcho",
    "IntHop",
    "IntShim",
    "ReorderTag",
]
