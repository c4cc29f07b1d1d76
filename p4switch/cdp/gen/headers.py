"""A header's bytes <-> its C struct.

A fixed-width header moves unit by unit as p4switch/backend/layout.py groups its fields: a
unit of up to 8 bytes is one big-endian load (or store) and a shift and mask per field; a
longer unit (a field wider than 64 bits, or fields sharing bytes with one) moves bit-exactly
with p4bits.h's helpers. A header with a varbit field moves field by field, the offsets after
the varbit known at run time.
"""

from __future__ import annotations

from p4switch.backend.layout import units
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.types import Bits, BoolType, StructType, Varbit, bit_width

from .emitter import c_ident
from .expr import dot
from .types import nbytes, wide

Leaf = tuple[str, object, int]  # C lvalue, P4 type, width in bits (a varbit's: its maximum)


def leaves(t: StructType, h: str) -> list[Leaf]:
    """The header's fields, nested structs flattened, in wire order."""
    out: list[Leaf] = []
    for n, ft in t.fields:
        path = dot(h, c_ident(n))
        if isinstance(ft, StructType):
            out += leaves(ft, path)
        elif isinstance(ft, Varbit):
            out.append((path, ft, ft.max_width))
        else:
            out.append((path, ft, bit_width(ft)))
    return out


def _from_raw(ft: object, raw: str, w: int) -> str:
    """A field's value from its raw bits (a uint64_t)."""
    if isinstance(ft, Bits) and ft.signed:
        return f"p4_sext({raw}, {w})"
    if isinstance(ft, BoolType):
        return f"(uint8_t)({raw})"
    return raw


def _to_raw(ft: object, value: str, w: int) -> str:
    """A field's raw bits (a uint64_t) from its value."""
    if isinstance(ft, Bits) and ft.signed:
        return f"((uint64_t){value} & UINT64_C({hex((1 << w) - 1)}))"
    if isinstance(ft, BoolType):
        return f"(uint64_t){value}"
    return value


def _bits(raw: str, shift: int, w: int, total: int) -> str:
    """Bits [shift, shift + w) of the `total`-bit number `raw`."""
    v = f"({raw} >> {shift})" if shift else raw
    return f"({v} & {hex((1 << w) - 1)})" if shift + w < total else v


def _check_fixed(t: StructType) -> None:
    if t.width % 8:
        raise UnsupportedConstruct(None, f"header {t.name} of {t.width} bits (not whole bytes)")


def extract_lines(t: StructType, h: str, p: str) -> list[str]:
    """Statements filling the fixed-width header lvalue `h` from the bytes at `p` (bounds
    checked) and making it valid; they go in a block of their own."""
    _check_fixed(t)
    layout = units(leaves(t, h)) or []
    lines = ["uint64_t u;"] if any(u.nbytes <= 8 for u in layout) else []
    byte = 0
    for unit in layout:
        if unit.nbytes <= 8:
            lines.append(f"u = p4_load_be({_at(p, byte)}, {unit.nbytes});")
            total = shift = unit.nbytes * 8
            for path, ft, w in unit.leaves:
                shift -= w
                lines.append(f"{path} = {_from_raw(ft, _bits('u', shift, w, total), w)};")
        else:
            at = byte * 8
            for path, ft, w in unit.leaves:
                lines.append(_get(path, ft, w, p, str(at)))
                at += w
        byte += unit.nbytes
    return [*lines, f"{dot(h, 'valid_')} = 1;"]


def emit_lines(t: StructType, h: str, p: str) -> list[str]:
    """Statements writing the fixed-width header `h` to the bytes at `p` (room checked)."""
    _check_fixed(t)
    lines = []
    byte = 0
    for unit in units(leaves(t, h)) or []:
        if unit.nbytes <= 8:
            shift = unit.nbytes * 8
            parts = []
            for path, ft, w in unit.leaves:
                shift -= w
                raw = _to_raw(ft, path, w)
                parts.append(f"({raw} << {shift})" if shift else raw)
            lines.append(f"p4_store_be({_at(p, byte)}, {unit.nbytes}, {' | '.join(parts)});")
        else:
            at = byte * 8
            for path, ft, w in unit.leaves:
                lines.append(_put(path, ft, w, p, str(at)))
                at += w
        byte += unit.nbytes
    return lines


def _get(path: str, ft: object, w: int, p: str, at: str) -> str:
    if wide(ft):
        return f"p4_get_wide({p}, {at}, {w}, {path}, {nbytes(w)});"
    return f"{path} = {_from_raw(ft, f'p4_get_bits({p}, {at}, {w})', w)};"


def _put(path: str, ft: object, w: int, p: str, at: str) -> str:
    if wide(ft):
        return f"p4_put_wide({p}, {at}, {w}, {path}, {nbytes(w)});"
    return f"p4_put_bits({p}, {at}, {w}, {_to_raw(ft, path, w)});"


def _check_varbit(t: StructType) -> None:
    if t.fixed_width % 8:
        raise UnsupportedConstruct(None, f"header {t.name}: its fixed fields are "
                                         f"{t.fixed_width} bits (not whole bytes)")


def varbit_extract_lines(t: StructType, h: str, p: str, nbits: str) -> list[str]:
    """`extract_lines` for a header with a varbit field of `nbits` bits (checked: a multiple
    of 8 within the maximum)."""
    _check_varbit(t)
    lines, at = [], "0"
    for path, ft, w in leaves(t, h):
        if isinstance(ft, Varbit):
            lines += [f"{path}.nbits = (uint32_t){nbits};",
                      f"p4_get_wide({p}, {at}, {nbits}, {path}.value, {nbytes(w)});"]
            at = f"{at} + {nbits}"
        else:
            lines.append(_get(path, ft, w, p, at))
            at = _plus(at, w)
    return [*lines, f"{dot(h, 'valid_')} = 1;"]


def varbit_emit_lines(t: StructType, h: str, p: str) -> list[str]:
    """`emit_lines` for a header with a varbit field: `varbit_size(t, h)` bytes."""
    _check_varbit(t)
    lines, at = [], "0"
    for path, ft, w in leaves(t, h):
        if isinstance(ft, Varbit):
            lines.append(f"p4_put_wide({p}, {at}, {path}.nbits, {path}.value, {nbytes(w)});")
            at = f"{at} + {path}.nbits"
        else:
            lines.append(_put(path, ft, w, p, at))
            at = _plus(at, w)
    return lines


def varbit_size(t: StructType, h: str) -> str:
    """The bytes of header `h` (with a varbit field) on the wire."""
    assert t.varbit is not None  # the caller's header has one
    return f"({t.fixed_width // 8} + ({dot(h, c_ident(t.varbit))}.nbits >> 3))"


def _plus(at: str, w: int) -> str:
    if at.isdigit():
        return str(int(at) + w)
    return f"{at} + {w}"


def _at(p: str, byte: int) -> str:
    return f"{p} + {byte}" if byte else p
