"""Hash algorithms against the standard check values and BMv2's own test vectors
(behavioral-model tests/test_calculations.cpp)."""

import pytest

from p4switch.runtime.hashing import (
    ALGORITHMS,
    UnsupportedAlgorithm,
    algorithm,
    hash_fields,
    pack_fields,
)

CHECK = b"123456789"


@pytest.mark.parametrize(("name", "expected"), [
    ("crc16", 0xBB3D), ("crc32", 0xCBF43926), ("csum16", 0xF62A), ("xor16", 0x3908),
    ("identity", 0x3132333435363738),
])
def test_check_values(name, expected):
    assert ALGORITHMS[name](CHECK) == expected


@pytest.mark.parametrize(("name", "data", "expected"), [
    ("crc16", bytes([0x0B, 0xB8, 0x1F, 0x90]), 0x5D8A),
    ("crc32", bytes([0x0B, 0xB8, 0x1F, 0x90]), 0x005D6A6F),
    ("xor16", bytes([0x0B, 0xB8, 0x1F, 0x90]), 0x1428),
    ("xor16", bytes([0x0B, 0xB8, 0x1F, 0x90, 0x5A]), 0x4E28),
    ("identity", bytes([1, 2, 3, 4, 5]), 0x0102030405),
    # IPv4 header with a zero checksum field -> its checksum (Wikipedia example used by BMv2)
    ("csum16", bytes.fromhex("450000730000400040110000c0a80001c0a800c7"), 0xB861),
])
def test_bmv2_vectors(name, data, expected):
    assert ALGORITHMS[name](data) == expected


def test_csum16_of_valid_header_is_zero():
    header = bytes.fromhex("45000073000040004011b861c0a80001c0a800c7")
    assert ALGORITHMS["csum16"](header) == 0


def _crc16_bitwise(data: bytes) -> int:
    """CRC-16/ARC the slow way: reflect input bytes, MSB-first division by 0x8005, reflect."""
    def reflect(v: int, n: int) -> int:
        return int(f"{v:0{n}b}"[::-1], 2)
    crc = 0
    for byte in data:
        crc ^= reflect(byte, 8) << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return reflect(crc, 16)


def test_crc16_table_matches_bitwise_definition():
    data = bytes(range(256)) + bytes(range(255, -1, -3))
    for n in (0, 1, 2, 7, 64, len(data)):
        assert ALGORITHMS["crc16"](data[:n]) == _crc16_bitwise(data[:n])
    assert ALGORITHMS["crc16"](b"\xff") == 0x4040


def test_pack_fields_bmv2_nonaligned():
    # BMv2 CalculationTest.Extra: 6-bit 0x3d, 8-bit 0x3e, 9-bit 1, 9-bit 0 -> identity 0xf4f80200
    packed = pack_fields([(0x3D, 6), (0x3E, 8), (1, 9), (0, 9)])
    assert packed == bytes.fromhex("f4f80200")
    # CalculationTest.WithConstantNonAligned: 4-bit 0, 16-bit 0xffff, 12-bit 0x9fd
    assert ALGORITHMS["identity"](pack_fields([(0, 4), (0xFFFF, 16), (0x9FD, 12)])) == 0x0FFFF9FD


def test_pack_fields_pads_at_the_end():
    assert pack_fields([(1, 1)]) == b"\x80"
    assert pack_fields([(0x3, 2), (0x1, 3)]) == bytes([0b11001000])
    assert pack_fields([(0xABC, 12)]) == b"\xab\xc0"
    assert pack_fields([]) == b""
    assert pack_fields([(0x1FF, 8)]) == b"\xff"  # truncated to the width


def test_hash_fields_base_and_max():
    fields = [(0x0A000001, 32), (0x0A000002, 32), (6, 8)]
    h = ALGORITHMS["crc16"](pack_fields(fields))
    assert hash_fields("crc16", fields, 0, 1 << 16) == h
    assert hash_fields("crc16", fields, 10, 4) == 10 + h % 4
    assert hash_fields("crc16", fields, 7, 0) == 7  # max 0 is treated as 1


def test_unsupported_algorithms_are_named():
    with pytest.raises(UnsupportedAlgorithm, match="unsupported: hash algorithm crc32_custom"):
        algorithm("crc32_custom")
    with pytest.raises(UnsupportedAlgorithm, match="random"):
        algorithm("random")
    with pytest.raises(UnsupportedAlgorithm, match="unknown hash algorithm 'md5'"):
        algorithm("md5")


def test_csum16_on_an_integer_equals_csum16_on_its_bytes():
    """The generated checksum code sums the packed fields as one integer (rt.csum16_int,
    inlined as rt.csum16_int_expr); both must agree with the byte-wise checksum everywhere,
    edge cases included: all zeros, sums that are nonzero multiples of 0xFFFF, odd byte counts
    (padded with a zero byte)."""
    import random

    from p4switch.backend.rt import csum16_int, csum16_int_expr

    inlined = compile(csum16_int_expr("value", "_v", "_r"), "<csum16_int_expr>", "eval")

    rng = random.Random(19)
    cases = [bytes(2), bytes(20), b"\xff\xff", b"\xff\xff" * 9, b"\x00\x01\xff\xfe",
             b"\x12", b"\xff", bytes(3), bytes.fromhex("450000730000400040110000c0a80001c0a800c7")]
    cases += [rng.randbytes(rng.randrange(1, 64)) for _ in range(3000)]
    for data in cases:
        padded = data + b"\x00" * (len(data) & 1)
        value = int.from_bytes(padded, "big")
        assert csum16_int(value) == ALGORITHMS["csum16"](data), data.hex()
        assert eval(inlined, {"value": value}) == ALGORITHMS["csum16"](data), data.hex()
