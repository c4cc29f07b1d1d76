"""Arithmetic, logic, casts, slices and literals: P4's rules, checked against Python."""

from __future__ import annotations

import pytest

OUT_FIELDS = [  # (name, bytes)
    ("add", 1), ("sub", 1), ("mul", 1), ("sat_add", 1), ("sat_sub", 1), ("shl", 1),
    ("shr", 1), ("shl_wide", 1), ("and_or_xor", 1), ("not_a", 1), ("neg_a", 1), ("concat", 2),
    ("slice_hi", None), ("pad", None), ("slice_set", 1), ("max_ab", 1), ("flags", 1), ("s_add", 1),
    ("s_sat_add", 1), ("s_sat_sub", 1), ("s_shr", 1), ("s_widened", 2), ("s_as_bits", 1),
    ("lits", 1), ("enum_val", 1), ("from_bool", 1), ("div_mod", 1),
]


def decode(out: bytes) -> dict[str, int]:
    """Split the out_t header (slice_hi is 4 bits, followed by a 4-bit-shifted rest)."""
    bits = "".join(f"{b:08b}" for b in out)
    fields, pos = {}, 0
    for name, nbytes in OUT_FIELDS:
        width = 4 if nbytes is None else nbytes * 8
        fields[name] = int(bits[pos:pos + width], 2)
        pos += width
    return fields


def signed8(v: int) -> int:
    return v - 256 if v & 0x80 else v


def run(switch, a: int, b: int, s: int, t: int, n: int) -> dict[str, int]:
    sw = switch("exprs.p4")
    out_len = (sum(8 * (nb or 0.5) for _, nb in OUT_FIELDS)) / 8
    frame = bytes([a, b, s & 0xFF, t & 0xFF, n]) + bytes(int(out_len + 0.5))
    (port, data), = sw.send(0, frame)
    assert data[:5] == frame[:5]
    return decode(data[5:])


CASES = [(200, 100, -100, -60, 3), (7, 7, 127, 1, 0), (0, 255, -128, 1, 9), (16, 3, 5, -7, 7)]


@pytest.mark.parametrize(("a", "b", "s", "t", "n"), CASES)
def test_expression_results(switch, a, b, s, t, n):
    r = run(switch, a, b, s, t, n)
    m = 0xFF
    assert r["add"] == (a + b) & m
    assert r["sub"] == (a - b) & m
    assert r["mul"] == (a * b) & m
    assert r["sat_add"] == min(a + b, 255)
    assert r["sat_sub"] == max(a - b, 0)
    assert r["shl"] == ((a << n) & m if n < 8 else 0)
    assert r["shr"] == a >> n
    assert r["shl_wide"] == 0
    assert r["and_or_xor"] == (a & 0xF0) | ((b & 0x0F) ^ 1)
    assert r["not_a"] == ~a & m
    assert r["neg_a"] == -a & m
    assert r["concat"] == a << 8 | b
    assert r["slice_hi"] == a >> 4
    assert r["slice_set"] == (a & 0xF0) | (b >> 4)
    assert r["max_ab"] == max(a, b)
    flags = ((a == b) << 7 | (a != b) << 6 | (a < b) << 5 | (a >= b) << 4 | (s < t) << 3 |
             (a > b and b != 0) << 2 | (a == 0 or b == 0) << 1 | (not a <= b))
    assert r["flags"] == flags
    assert signed8(r["s_add"]) == signed8((s + t) & m)
    assert signed8(r["s_sat_add"]) == max(min(s + t, 127), -128)
    assert signed8(r["s_sat_sub"]) == max(min(s - t, 127), -128)
    assert signed8(r["s_shr"]) == s >> 2
    assert r["s_widened"] == s & 0xFFFF
    assert r["s_as_bits"] == s & m
    assert r["lits"] == (4 + 0x31 + 4) & m
    assert r["enum_val"] == 8
    assert r["from_bool"] == 2
    assert r["div_mod"] == ((a // 16) << 4 | (a % 16)) & m
