"""Hash and checksum algorithms, bit-exact with BMv2 (`src/bm_sim/calculations.cpp`).

Every algorithm takes the bytes a BMv2 calculation sees: the input fields packed bit by bit,
MSB first, without byte alignment, zero-padded to a whole byte at the end (`pack_fields`).

Check values over b"123456789": crc16 0xBB3D, crc32 0xCBF43926, csum16 0xF62A, xor16 0x3908.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence


def _crc16_arc_table() -> tuple[int, ...]:
    # CRC-16/ARC: poly 0x8005, reflected in and out, init 0, xorout 0 -> reflected poly 0xA001.
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC16_TABLE = _crc16_arc_table()
_CRC16_PAIRS: list[int] = []  # two bytes per step, built on first use
_LE_WORDS: dict[int, Callable[[bytes], tuple[int, ...]]] = {}  # data length -> unpacker


def _crc16_pair_table() -> list[int]:
    # Two steps of the reflected update from crc c over bytes b0, b1 depend only on
    # x = (c ^ b0) & 0xFF and y = ((c >> 8) ^ b1): c2 = (T[x] >> 8) ^ T[y ^ (T[x] & 0xFF)].
    t = _CRC16_TABLE
    return [(t[x] >> 8) ^ t[y ^ (t[x] & 0xFF)] for y in range(256) for x in range(256)]


def crc16(data: bytes) -> int:
    """CRC-16/ARC, BMv2's `crc16`."""
    if not _CRC16_PAIRS:
        _CRC16_PAIRS.extend(_crc16_pair_table())
    pairs = _CRC16_PAIRS
    n = len(data)
    words = _LE_WORDS.get(n)
    if words is None:  # one unpacker per length: no format string per packet
        words = _LE_WORDS[n] = struct.Struct(f"<{n >> 1}H").unpack_from
    crc = 0
    for word in words(data):
        crc = pairs[crc ^ word]
    if n & 1:
        crc = (crc >> 8) ^ _CRC16_TABLE[(crc ^ data[-1]) & 0xFF]
    return crc


# BMv2's `crc32` is CRC-32 as zlib computes it (unsigned in Python 3); called directly, the
# packet path saves a call layer
crc32: Callable[[bytes], int] = zlib.crc32


def _words16(data: bytes) -> tuple[int, ...]:
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    return struct.unpack(f">{len(data) // 2}H", data)


def csum16(data: bytes) -> int:
    """RFC 1071 Internet checksum: ones' complement of the ones' complement sum of big-endian
    16-bit words, an odd last byte padded with a zero low byte. BMv2's `csum16`/`cksum16`."""
    total = sum(_words16(data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def xor16(data: bytes) -> int:
    """XOR of big-endian 16-bit words, an odd last byte taken as the high byte."""
    result = 0
    for word in _words16(data):
        result ^= word
    return result


def identity(data: bytes) -> int:
    """The first (at most) 8 bytes as a big-endian number."""
    return int.from_bytes(data[:8], "big")


ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc32": crc32,
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
}

# v1model HashAlgorithm members that exist but this target does not implement.
UNSUPPORTED: dict[str, str] = {
    "crc16_custom": "crc16_custom needs a control-plane configurable polynomial",
    "crc32_custom": "crc32_custom needs a control-plane configurable polynomial",
    "random": "HashAlgorithm.random is not accepted by BMv2",
}


class UnsupportedAlgorithm(ValueError):
    """An algorithm name that is unknown or not implemented."""


def algorithm(name: str | None) -> Callable[[bytes], int]:
    """The function for a v1model `HashAlgorithm` name; UnsupportedAlgorithm if there is none
    (or no name)."""
    if name in ALGORITHMS:
        return ALGORITHMS[name]
    if name in UNSUPPORTED:
        raise UnsupportedAlgorithm(f"unsupported: hash algorithm {name} ({UNSUPPORTED[name]})")
    raise UnsupportedAlgorithm(
        f"unknown hash algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}")


def pack_fields(fields: Sequence[tuple[int, int]]) -> bytes:
    """Concatenate (value, width) fields bit by bit, MSB first, zero-padded to whole bytes.

    Values wider than their width are truncated to it, as a field of that width would hold.
    """
    acc = 0
    nbits = 0
    for value, width in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def hash_fields(algo: str, fields: Sequence[tuple[int, int]], base: int, max_: int) -> int:
    """v1model `hash()`: base + (H mod max), max 0 treated as 1 (as BMv2 does).

    The caller truncates the result to the output field's width.
    """
    h = algorithm(algo)(pack_fields(fields))
    return base + h % (max_ or 1)
