"""INT echo in ACKs (for HPCC): the receiver copies a data packet's INT shim and records into the
ACK that answers it; the sender reads them back.

The format is `traffic.headers.IntEcho` (declared once there): the shim and records exactly as
the data packet brought them, newest record first, placed after the ACK's AETH and covered by
its ICRC. It rides in the RoCE payload, so switches neither see nor extend it.

    echo = int_echo_of(data_frame)          # before stripping; None without INT
    ack = add_echo(plain_ack, echo)         # the receiver's ACK, grown by len(echo)
    report = read_echo(ack, roce_layout(ack))   # at the sender: IntReport, path order
"""

from __future__ import annotations

from traffic.frames import compute_icrc, set_ipv4_checksum
from traffic.inband import IntReport, int_shim_at, read_shim
from traffic.wire import (
    ETH_LEN,
    ICRC_LEN,
    INT_HOP_LEN,
    INT_SHIM,
    INT_SHIM_LEN,
    IP_IHL_MASK,
    IPV4,
    UDP_HDR,
    RoceLayout,
    int_shim_len,
)

_IP_LEN, _UDP_LEN = IPV4["len"].span, UDP_HDR["len"].span
_HOP_COUNT = INT_SHIM["hop_count"].at


def int_echo_of(frame: bytes | bytearray | memoryview, at: int | None = None) -> bytes | None:
    """The INT shim and records of a data frame (as received, before `strip_int`), or None;
    `at`: where the shim starts, if the caller has found it (`int_shim_at`)."""
    if at is None:
        at = int_shim_at(frame)
    if at < 0:
        return None
    size = int_shim_len(frame, at)
    if len(frame) < at + size:
        return None
    return bytes(frame[at : at + size])


def add_echo(ack: bytes | bytearray, echo: bytes) -> bytes:
    """An untagged ACK frame (IPv4 / UDP / BTH / AETH / ICRC) with `echo` after the AETH: IPv4
    and UDP lengths grown, IPv4 checksum and ICRC recomputed."""
    grow = len(echo)
    ihl = (ack[ETH_LEN] & IP_IHL_MASK) * 4
    out = bytearray(ack[:-ICRC_LEN])
    out += echo
    out += bytes(ICRC_LEN)
    ip = out[ETH_LEN : ETH_LEN + ihl]
    ip[_IP_LEN] = (int.from_bytes(ip[_IP_LEN], "big") + grow).to_bytes(2, "big")
    set_ipv4_checksum(ip)
    out[ETH_LEN : ETH_LEN + ihl] = ip
    udp = ETH_LEN + ihl
    length = slice(udp + _UDP_LEN.start, udp + _UDP_LEN.stop)
    out[length] = (int.from_bytes(out[length], "big") + grow).to_bytes(2, "big")
    out[-ICRC_LEN:] = compute_icrc(out)
    return bytes(out)


def read_echo(frame: bytes | bytearray | memoryview, at: RoceLayout) -> IntReport | None:
    """The records an ACK echoes (path order: the first switch first), or None if it echoes
    none or they are cut short."""
    start, end = at.aeth_end, len(frame) - ICRC_LEN
    if end - start < INT_SHIM_LEN:
        return None
    count = frame[start + _HOP_COUNT]
    if end - start < INT_SHIM_LEN + count * INT_HOP_LEN:
        return None
    return read_shim(frame, start)
