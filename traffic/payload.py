"""Checked payloads: a deterministic byte pattern per (QPN, PSN) that receivers verify.

With `SenderConfig.pattern` the payload of packet PSN p of queue pair q is `PATTERN(q)` from
offset p mod 251 on (a prime, so consecutive packets differ), for as many bytes as the packet
carries; the first packet of a message still starts with its send time (`STAMP_LEN` bytes),
which the check skips. With `ReceiverConfig.check_payload` the receiver compares every packet it
accepts against the same pattern and counts the packets and the 4-byte elements (float32, as
nccl-tests counts) that differ. Sender and receiver share one slice of a precomputed block per
QP, so the per-packet cost is a copy and a compare.
"""

from __future__ import annotations

import random
from functools import lru_cache

SHIFTS = 251
MAX_PAYLOAD = 4096
ELEMENT = 4  # bytes per element (float32)


@lru_cache(maxsize=4096)
def pattern(qpn: int) -> bytes:
    """The pattern block of one QP: long enough for any payload at any shift."""
    return random.Random(qpn).randbytes(MAX_PAYLOAD + SHIFTS)


def expected(qpn: int, psn: int, length: int) -> bytes:
    """The payload bytes packet `psn` of QP `qpn` carries (before any send stamp)."""
    shift = (psn & 0xFFFFFF) % SHIFTS
    return pattern(qpn)[shift : shift + length]


def wrong_elements(got: bytes | memoryview, want: bytes, skip: int = 0) -> int:
    """Elements (4-byte words, counted from the payload's start) with a differing byte, from
    byte `skip` on."""
    wrong = 0
    for at in range(0, len(want), ELEMENT):
        end = min(at + ELEMENT, len(want))
        if end <= skip:
            continue
        lo = max(at, skip)
        if got[lo:end] != want[lo:end]:
            wrong += 1
    return wrong
