"""Byte layout of a fixed-width header for the `struct` module.

A header's bit fields are grouped into units of whole bytes: a unit of 1, 2, 4 or 8 bytes is
packed and unpacked natively (`B`, `H`, `I`, `Q`), any other as bytes (`Ns`, through
`int.from_bytes` / `int.to_bytes`). The generated parser then moves a header with one
`unpack_from` and shifts of small integers, and the deparser with one `pack`, instead of
shifting one header-wide integer per field (a 160-bit IPv4 header takes 25 big-integer
operations either way). Units are chosen to keep the work small: a field alone in a native
unit costs no shift, and fields sharing a unit cost a shift and/or a mask each.
"""

from __future__ import annotations

from dataclasses import dataclass

NATIVE = {1: "B", 2: "H", 4: "I", 8: "Q"}


@dataclass(frozen=True)
class Unit:
    """Consecutive fields filling `nbytes` whole bytes; `leaves` are (path, type, width),
    the first field in the top bits."""

    nbytes: int
    leaves: tuple[tuple[str, object, int], ...]

    @property
    def native(self) -> bool:
        return self.nbytes in NATIVE

    @property
    def code(self) -> str:
        return NATIVE.get(self.nbytes, f"{self.nbytes}s")


def struct_format(units: list[Unit]) -> str:
    return ">" + "".join(u.code for u in units)


def _cost(nbytes: int, widths: list[int]) -> float:
    """Relative cost of moving one unit: the unit itself, then a shift or mask per field
    sharing it (dearer on 64-bit values)."""
    cost = 1.0 if nbytes in NATIVE else 4.0
    if len(widths) > 1:
        ops = 2 * len(widths) - 2  # the top field needs no mask, the bottom one no shift
        cost += ops * (1.3 if nbytes > 4 else 1.0)
    return cost


def units(leaves: list[tuple[str, object, int]]) -> list[Unit] | None:
    """The cheapest grouping of a header's leaves into units; None if the header does not
    end on a byte boundary."""
    runs: list[tuple[int, list]] = []  # the smallest byte-aligned runs of fields
    current: list = []
    bits = 0
    for leaf in leaves:
        current.append(leaf)
        bits += leaf[2]
        if bits % 8 == 0:
            runs.append((bits // 8, current))
            current, bits = [], 0
    if current:
        return None
    n = len(runs)
    best = [0.0] * (n + 1)
    end = [0] * n
    for i in range(n - 1, -1, -1):
        best[i] = float("inf")
        size, widths = 0, []
        for j in range(i, n):
            size += runs[j][0]
            widths += [w for _, _, w in runs[j][1]]
            if j > i and size > 8:
                break
            cost = _cost(size, widths) + best[j + 1]
            if cost < best[i]:
                best[i], end[i] = cost, j
    out: list[Unit] = []
    i = 0
    while i < n:
        j = end[i]
        out.append(Unit(sum(r[0] for r in runs[i:j + 1]),
                        tuple(leaf for r in runs[i:j + 1] for leaf in r[1])))
        i = j + 1
    return out


def unit_value(unit: Unit, values: list[str]) -> str:
    """The argument of `pack` for `unit`, from its fields' raw values (in `unit.leaves`
    order, each within its width)."""
    shift = unit.nbytes * 8
    parts = []
    for value, (_, _, width) in zip(values, unit.leaves, strict=True):
        shift -= width
        parts.append(f"({value} << {shift})" if shift else value)
    expr = " | ".join(parts)
    return expr if unit.native else f"({expr}).to_bytes({unit.nbytes}, 'big')"
