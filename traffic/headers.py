"""Scapy layers the lab adds to RoCEv2: RETH and the DLB reorder tag, bound into scapy's stack.

Importing this module registers the bindings, so scapy then decodes
  Ether / IP(proto 253) / ReorderTag / UDP(4791) / BTH / [RETH | AETH | CNPPadding] / payload
The tag is the 8-byte shim shared with the P4 programs (`p4src/include`): the original IPv4
protocol, flags (bit 0 tagged by a host, bit 1 tagged by a switch), a flow id and a per-flow
sequence number starting at 0. IPv4 total length includes it.
"""

from __future__ import annotations

import logging

from scapy.contrib.roce import AETH, BTH, CNP_OPCODE, CNPPadding
from scapy.error import log_runtime
from scapy.fields import ByteEnumField, FlagsField, IntField, ShortField, XIntField, XLongField
from scapy.layers.inet import IP, UDP
from scapy.packet import Packet, bind_layers

ROCE_UDP_PORT = 4791
TAG_IP_PROTO = 253  # RFC 3692 experimental
TAG_FLAG_HOST = 0x01
TAG_FLAG_SWITCH = 0x02

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
        ByteEnumField("next_proto", 17, {17: "udp"}),
        FlagsField("flags", TAG_FLAG_HOST, 8, ["host", "switch", *(f"r{i}" for i in range(2, 8))]),
        ShortField("flow_id", 0),
        IntField("seq", 0),
    ]

    def post_build(self, p: bytes, pay: bytes) -> bytes:
        bth = self.getlayer(BTH)
        ip = self.underlayer
        if bth is None or bth.icrc is not None or not isinstance(ip, IP) or ip.ihl not in (None, 5):
            return p + pay
        from traffic.frames import compute_icrc
        from traffic.wire import ICRC_LEN

        untagged = ip.copy()
        untagged.remove_payload()
        untagged.proto, untagged.len, untagged.chksum = self.next_proto, None, None
        head = bytes(14) + bytes(untagged / pay)  # any Ethernet header: not covered
        return p + pay[:-ICRC_LEN] + compute_icrc(head)


class _TaggedIcrcNotice(logging.Filter):
    """Silence scapy's BTH warning about the tag under UDP: ReorderTag fixes that ICRC."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "underlayer protocol ReorderTag" not in record.getMessage()


log_runtime.addFilter(_TaggedIcrcNotice())

for _op in sorted(RETH_OPCODES):
    bind_layers(BTH, RETH, opcode=_op)
bind_layers(IP, ReorderTag, proto=TAG_IP_PROTO)
bind_layers(ReorderTag, UDP, next_proto=17)

__all__ = [
    "AETH",
    "BTH",
    "CNP",
    "RETH",
    "CNPPadding",
    "ReorderTag",
]
