"""Frames for the switch tests (Ethernet, and the test program's probe header)."""

from __future__ import annotations

import struct

PROBE_TYPE = 0x88B5


def mac(n: int) -> bytes:
    return (0x020000000000 | n).to_bytes(6, "big")


def eth(dst: bytes, src: bytes, ether_type: int = 0x0800, payload: bytes = b"") -> bytes:
    frame = dst + src + struct.pack("!H", ether_type) + payload
    return frame + bytes(max(0, 60 - len(frame)))


def probe(dst: bytes, src: bytes, seq: int, size: int = 60) -> bytes:
    body = struct.pack("!IIII", seq, 0, 0, 0)
    frame = eth(dst, src, PROBE_TYPE, body)
    return frame + bytes(max(0, size - len(frame)))


def probe_fields(frame: bytes) -> tuple[int, int, int, int]:
    """(seq, enq_qdepth, deq_qdepth, deq_timedelta) of a probe frame."""
    return struct.unpack("!IIII", frame[14:30])


def is_probe(frame: bytes) -> bool:
    return frame[12:14] == struct.pack("!H", PROBE_TYPE)
