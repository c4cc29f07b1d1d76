"""hash() through a P4 program: check values over "123456789", BMv2's bit packing, base and
max, and invalid headers' fields left out."""

from __future__ import annotations

import zlib

import pytest

from p4switch.runtime.hashing import csum16

DIGITS = b"123456789"


def run(switch, mode: int, opt: int | None = None, nibbles: int = 0xA5) -> int:
    sw = switch("hash.p4")
    if opt is not None:
        mode |= 0x80
    frame = DIGITS + bytes([nibbles, mode]) + (bytes([opt]) if opt is not None else b"") + \
        bytes(8)
    (_, out), = sw.send(0, frame)
    assert out[:-8] == frame[:-8]
    return int.from_bytes(out[-8:], "big")


@pytest.mark.parametrize(("mode", "check"), [
    (0, 0xBB3D),                          # crc16 = CRC-16/ARC
    (1, 0xCBF43926),                      # crc32 = zlib's
    (2, 0xF62A),                          # csum16 = RFC 1071
    (3, 0x3908),                          # xor16
    (4, int.from_bytes(DIGITS[:8], "big")),  # identity: the first 8 bytes
])
def test_algorithm_check_values(switch, mode, check):
    assert run(switch, mode) == check


def test_base_plus_hash_modulo_max(switch):
    assert run(switch, 5) == 1000 + 0xBB3D % 7
    assert run(switch, 6) == 5


def test_fields_are_packed_msb_first_without_alignment(switch):
    assert run(switch, 7, nibbles=0xA5) == 0xA5
    assert run(switch, 7, nibbles=0x3C) == 0x3C


def test_fields_of_invalid_headers_are_skipped(switch):
    assert run(switch, 8) == 0xCBF43926
    assert run(switch, 8, opt=0x42) == zlib.crc32(b"\x42" + DIGITS)


def test_runs_of_fields_from_several_headers(switch):
    assert run(switch, 10, nibbles=0x5A) == zlib.crc32(b"\x5a\x0a")
    assert run(switch, 10, opt=0x42, nibbles=0x5A) == zlib.crc32(b"\x42\x5a\x8a\x42")


def test_result_is_truncated_to_the_output_width(switch):
    assert run(switch, 9) == 0xCBF43926 & 0xFF


def test_fast_checksum_matches_the_runtime_algorithm():
    import random

    from p4switch.backend.rt import csum16 as fast
    rnd = random.Random(1)
    for n in range(0, 64):
        data = bytes(rnd.randrange(256) for _ in range(n))
        assert fast(data) == csum16(data)
