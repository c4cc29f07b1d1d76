"""Headers moved with `struct` (backend/layout.py): every field lands where its bits are,
whatever its width or sign, and a header comes out as it went in."""

from __future__ import annotations

import random

from p4switch.backend.layout import units

# (name, width, kind) of layout.p4's odd_t, in order: 45 bytes
FIELDS = [("flag", 1, "bool"), ("three", 3, "bit"), ("s4", 4, "int"), ("mac", 48, "bit"),
          ("qp", 24, "bit"), ("seven", 7, "bit"), ("s9", 9, "int"), ("wide", 128, "bit"),
          ("port", 16, "bit"), ("five", 5, "bit"), ("eleven", 11, "bit"), ("u64", 64, "bit"),
          ("forty", 40, "bit")]
NBYTES = sum(w for _, w, _ in FIELDS) // 8


def split(data: bytes) -> dict[str, int]:
    """The header's fields by bit position, independently of the generated code."""
    value, shift, out = int.from_bytes(data, "big"), NBYTES * 8, {}
    for name, width, _ in FIELDS:
        shift -= width
        out[name] = (value >> shift) & ((1 << width) - 1)
    return out


def join(fields: dict[str, int]) -> bytes:
    value = 0
    for name, width, _ in FIELDS:
        value = (value << width) | (fields[name] & ((1 << width) - 1))
    return value.to_bytes(NBYTES, "big")


def rewritten(f: dict[str, int]) -> dict[str, int]:
    """What OddIngress does to the first header (two's complement wrap-around)."""
    return {"flag": f["flag"] ^ 1, "three": f["three"] + 1, "s4": f["s4"] - 3,
            "mac": f["mac"] ^ 0x010203040506, "qp": f["qp"] + 7, "seven": f["seven"] + 100,
            "s9": -f["s9"], "wide": f["wide"] + 1, "port": f["port"],
            "five": f["five"] + (f["eleven"] & 0x1F), "eleven": f["eleven"] ^ 0x555,
            "u64": f["u64"] + 0x100000001, "forty": f["forty"] - 1}


def test_every_bit_of_odd_headers_goes_through(switch):
    sw = switch("layout.p4")
    rng = random.Random(45)
    edge = [bytes(NBYTES), b"\xff" * NBYTES, bytes([0x80] + [0] * (NBYTES - 1)),
            bytes([0x7F] + [0xFF] * (NBYTES - 1))]
    for first in edge + [rng.randbytes(NBYTES) for _ in range(500)]:
        second = rng.randbytes(NBYTES)
        payload = rng.randbytes(rng.randrange(0, 20))
        out = sw.send(3, first + second + payload)
        assert out == [(1, join(rewritten(split(first))) + second + payload)], first.hex()


def test_layout_units_cover_each_field_once_in_order():
    leaves = [(name, None, width) for name, width, _ in FIELDS]
    layout = units(leaves)
    assert layout is not None
    assert [leaf for u in layout for leaf in u.leaves] == leaves
    for u in layout:
        assert sum(w for _, _, w in u.leaves) == u.nbytes * 8
        assert u.code == {1: "B", 2: "H", 4: "I", 8: "Q"}.get(u.nbytes, f"{u.nbytes}s")
    # a field alone in a native unit, shared ones merged up to a native size
    assert [u.code for u in units([("a", None, 8), ("b", None, 16)])] == ["B", "H"]
    assert [u.code for u in units([("a", None, 1), ("b", None, 7), ("c", None, 24)])] == ["I"]
    assert units([("a", None, 3), ("b", None, 4)]) is None  # not whole bytes
