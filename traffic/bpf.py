"""Classic BPF socket filters, so AF_PACKET sockets wake up only for the frames they handle.

Without them a sender's control socket would receive a copy of every frame the sender itself
transmits (packet taps see outgoing frames too).
"""

from __future__ import annotations

import ctypes
import socket
import struct
from typing import Any

from traffic.headers import ACK, CNP, INT_IP_PROTO, TAG_IP_PROTO
from traffic.wire import (
    ETH_TYPE_AT,
    IP_PROTO_AT,
    IP_VER_IHL_AT,
    IPV4_NO_OPTIONS,
    PLAIN,
    TAG,
    TAG_AT,
    TAGGED,
)

SO_ATTACH_FILTER = 26
_LD_W_ABS, _LD_H_ABS, _LD_B_ABS = 0x20, 0x28, 0x30
_JEQ_K = 0x15
_RET_K = 0x06
_PKTTYPE = 0xFFFFF000 + 4  # SKF_AD_OFF + SKF_AD_PKTTYPE
_OTHERHOST, _OUTGOING = 3, 4
_ACCEPT, _DROP = 0x40000, 0
_ETHERTYPE_IPV4, _ETHERTYPE_MAC_CONTROL = 0x0800, 0x8808
_UDP = 17

Insn = tuple[int, int, int, int]  # code, jump-if-true, jump-if-false, k
Step = tuple[Any, ...] | str  # (code, k), (code, k, true_label, false_label), or a label


def _assemble(prog: list[Step]) -> list[Insn]:
    """Instructions as (code, k) or (code, k, true_label, false_label); labels are str entries
    in the list, and "next" falls through."""
    labels: dict[str, int] = {}
    pc = 0
    for item in prog:
        if isinstance(item, str):
            labels[item] = pc
        else:
            pc += 1
    out: list[Insn] = []
    for item in prog:
        if isinstance(item, str):
            continue
        here = len(out)
        if len(item) == 2:
            out.append((item[0], 0, 0, item[1]))
        else:
            code, k, t, f = item
            jt = 0 if t == "next" else labels[t] - here - 1
            jf = 0 if f == "next" else labels[f] - here - 1
            out.append((code, jt, jf, k))
    return out


def _incoming_then(prog: list[Step], for_this_host: bool = False) -> list[Insn]:
    """Drop what this host sent and, with `for_this_host`, frames addressed to another MAC
    (a bridge floods them; the kernel ignores them, so must a NIC's receive path)."""
    head: list[Step] = [(_LD_W_ABS, _PKTTYPE), (_JEQ_K, _OUTGOING, "drop", "next")]
    if for_this_host:
        head.append((_JEQ_K, _OTHERHOST, "drop", "next"))
    return _assemble([*head, *prog, "drop", (_RET_K, _DROP), "accept", (_RET_K, _ACCEPT)])


TAG_NEXT_PROTO_AT = TAG_AT + TAG["next_proto"].at


def roce_receiver_filter(udp_port: int = 4791, pause: bool = False) -> list[Insn]:
    """Incoming IPv4 (no options) to UDP `udp_port` for this host, with or without the tag;
    and whatever carries the INT shim (after IPv4 or the tag), which the receiver strips; with
    `pause`, PFC (MAC control) frames too (an endpoint that sends and receives)."""
    control = [(_JEQ_K, _ETHERTYPE_MAC_CONTROL, "accept", "next")] if pause else []
    return _incoming_then([
        (_LD_H_ABS, ETH_TYPE_AT), *control, (_JEQ_K, _ETHERTYPE_IPV4, "next", "drop"),
        (_LD_B_ABS, IP_VER_IHL_AT), (_JEQ_K, IPV4_NO_OPTIONS, "next", "drop"),
        (_LD_B_ABS, IP_PROTO_AT), (_JEQ_K, _UDP, "udp", "next"),
        (_JEQ_K, INT_IP_PROTO, "accept", "next"),
        (_JEQ_K, TAG_IP_PROTO, "next", "drop"),
        (_LD_B_ABS, TAG_NEXT_PROTO_AT), (_JEQ_K, INT_IP_PROTO, "accept", "next"),
        (_LD_H_ABS, TAGGED.dport.start), (_JEQ_K, udp_port, "accept", "drop"),
        "udp", (_LD_H_ABS, PLAIN.dport.start), (_JEQ_K, udp_port, "accept", "drop"),
    ], for_this_host=True)


def sender_control_filter(udp_port: int = 4791) -> list[Insn]:
    """Incoming PFC (MAC control) frames and RoCE CNPs and ACKs, tagged or not (data arriving
    for this host's receiver does not wake the sender)."""
    return _incoming_then([
        (_LD_H_ABS, ETH_TYPE_AT), (_JEQ_K, _ETHERTYPE_MAC_CONTROL, "accept", "next"),
        (_JEQ_K, _ETHERTYPE_IPV4, "next", "drop"),
        (_LD_B_ABS, IP_VER_IHL_AT), (_JEQ_K, IPV4_NO_OPTIONS, "next", "drop"),
        (_LD_B_ABS, IP_PROTO_AT), (_JEQ_K, _UDP, "udp", "next"),
        (_JEQ_K, TAG_IP_PROTO, "next", "drop"),
        (_LD_H_ABS, TAGGED.dport.start), (_JEQ_K, udp_port, "next", "drop"),
        (_LD_B_ABS, TAGGED.opcode), (_JEQ_K, CNP, "accept", "next"), (_JEQ_K, ACK, "accept", "drop"),
        "udp", (_LD_H_ABS, PLAIN.dport.start), (_JEQ_K, udp_port, "next", "drop"),
        (_LD_B_ABS, PLAIN.opcode), (_JEQ_K, CNP, "accept", "next"), (_JEQ_K, ACK, "accept", "drop"),
    ], for_this_host=True)


def incoming_filter() -> list[Insn]:
    """Every frame that arrived on the interface (none that this host sent)."""
    return _incoming_then([(_RET_K, _ACCEPT)])


def attach(sock: socket.socket, program: list[Insn]) -> None:
    blob = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buf = ctypes.create_string_buffer(blob)
    fprog = struct.pack("HL", len(program), ctypes.addressof(buf))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
