"""Python classes for P4 headers and structs (slots; extract/emit for headers).

Each class comes in two forms with the same methods and behaviour: a Python class (the
reference, run by the interpreter) and a Cython extension type for the native pipeline
(p4switch/native.py), whose fields are C slots, so the stages typed with it reach a field
without a dictionary.
"""

from __future__ import annotations

from ..frontend.types import (
    Bits,
    BoolType,
    P4Type,
    StackType,
    StructType,
    TupleType,
    Varbit,
    bit_width,
)
from .emitter import Emitter, py_ident
from .layout import Unit, struct_format, unit_value, units


def class_name(t: StructType) -> str:
    return ("H_" if t.kind == "header" else "S_") + py_ident(t.name)


def zero_value(t: P4Type | None) -> str:
    """Source of a fresh zero/invalid value of type t (None: untyped, an int)."""
    if isinstance(t, StructType):
        return f"{class_name(t)}()"
    if isinstance(t, StackType):
        return f"HeaderStack.blank({class_name(t.elem)}, {t.size})"
    if isinstance(t, BoolType):
        return "False"
    if isinstance(t, Varbit):
        return "(0, 0)"
    if isinstance(t, TupleType):
        return "(" + "".join(zero_value(e) + ", " for e in t.elems) + ")"
    return "0"


def is_aggregate(t: P4Type | None) -> bool:
    return isinstance(t, (StructType, StackType))


def gen_struct_classes(em: Emitter, structs: list[StructType], native: bool = False) -> None:
    """The classes of `structs`: Python classes, or (`native`) Cython extension types."""
    for t in structs:
        if native:
            _gen_native_class(em, t)
        else:
            _gen_class(em, t)


def _field_ctype(ft: P4Type) -> str:
    """The C slot type of a field in the native classes: a nested struct or header is its
    extension type, everything else a Python object (the values and their arithmetic stay
    Python's, so the native pipeline computes exactly what the Python one does)."""
    return class_name(ft) if isinstance(ft, StructType) else "object"


def _gen_native_class(em: Emitter, t: StructType) -> None:
    """`_gen_class`'s class as a Cython extension type: the same methods, with per-field
    zeroing and copying where the Python class uses its instance dict."""
    cls = class_name(t)
    names = [py_ident(n) for n, _ in t.fields]
    fields = list(zip(names, (ft for _, ft in t.fields), strict=True))
    header = t.kind == "header"
    em.line(f"cdef class {cls}:")
    with em.indent():
        if header:
            em.line("cdef public bint _valid")
        for n, ft in fields:
            em.line(f"cdef public {_field_ctype(ft)} {n}")
        em.line(f"_p4name = {t.name!r}")
        em.line(f"_fields = {tuple(n for n, _ in t.fields)!r}")
        em.line("def __cinit__(self):")  # in tp_new: no __init__ call to pay per instance
        with em.indent():
            for n, ft in fields:
                em.line(f"self.{n} = {zero_value(ft)}")
        em.line("def _copy(self):")
        with em.indent():
            em.line(f"cdef {cls} c = {cls}.__new__({cls})")
            if header:
                em.line("c._valid = self._valid")
            for n, ft in fields:
                em.line(f"c.{n} = self.{n}._copy()" if is_aggregate(ft) else f"c.{n} = self.{n}")
            em.line("return c")
        em.line(f"def _assign(self, {cls} o):")
        with em.indent():
            if header:
                em.line("self._valid = o._valid")
            for n, ft in fields:
                if header:  # as the Python header: nested values copied, not shared
                    em.line(f"self.{n} = o.{n}._copy()" if is_aggregate(ft)
                            else f"self.{n} = o.{n}")
                elif is_aggregate(ft):
                    em.line(f"self.{n}._assign(o.{n})")
                else:
                    em.line(f"self.{n} = o.{n}")
        _gen_shared_methods(em, t, names, fields, ["self._valid = False"] + [
            f"self.{n} = {zero_value(ft)}" for n, ft in fields])
    _gen_layout(em, t)


def _gen_class(em: Emitter, t: StructType) -> None:
    """Headers keep their fields in the instance dict with class-level zero defaults, so a
    new (invalid, all-zero) header costs one allocation; structs own their nested values."""
    cls = class_name(t)
    names = [py_ident(n) for n, _ in t.fields]
    header = t.kind == "header"
    em.line(f"class {cls}:")
    with em.indent():
        em.line(f"_p4name = {t.name!r}")
        em.line(f"_fields = {tuple(n for n, _ in t.fields)!r}")
        if header:
            # struct-typed fields (bit-vector structs) are per-instance objects
            nested = [(n, ft) for n, (_, ft) in zip(names, t.fields, strict=True)
                      if isinstance(ft, StructType)]
            em.line("_valid = False")
            for n, (_, ft) in zip(names, t.fields, strict=True):
                if not isinstance(ft, StructType):
                    em.line(f"{n} = {zero_value(ft)}")
            if nested:
                em.line("def __init__(self):")
                with em.indent():
                    for n, ft in nested:
                        em.line(f"self.{n} = {zero_value(ft)}")
            em.line("def _copy(self):")
            with em.indent():
                em.line(f"c = {cls}.__new__({cls})")
                em.line("c.__dict__.update(self.__dict__)")
                for n, _ in nested:
                    em.line(f"c.{n} = self.{n}._copy()")
                em.line("return c")
            em.line("def _assign(self, o):")
            with em.indent():
                em.line("d = self.__dict__")
                em.line("d.clear()")
                em.line("d.update(o.__dict__)")
                for n, _ in nested:
                    em.line(f"self.{n} = o.{n}._copy()")
        else:
            em.line(f"__slots__ = {tuple(names)!r}")
            em.line("def __init__(self):")
            with em.indent():
                for n, (_, ft) in zip(names, t.fields, strict=False):
                    em.line(f"self.{n} = {zero_value(ft)}")
            em.line("def _copy(self):")
            with em.indent():
                em.line(f"c = {cls}.__new__({cls})")
                for n, (_, ft) in zip(names, t.fields, strict=False):
                    suffix = "._copy()" if is_aggregate(ft) else ""
                    em.line(f"c.{n} = self.{n}{suffix}")
                em.line("return c")
            em.line("def _assign(self, o):")
            with em.indent():
                for n, (_, ft) in zip(names, t.fields, strict=False):
                    if is_aggregate(ft):
                        em.line(f"self.{n}._assign(o.{n})")
                    else:
                        em.line(f"self.{n} = o.{n}")
        fields = list(zip(names, (ft for _, ft in t.fields), strict=True))
        _gen_shared_methods(em, t, names, fields, ["self.__dict__.clear()"] + [
            f"self.{n} = {zero_value(ft)}" for n, ft in fields if isinstance(ft, StructType)])
    _gen_layout(em, t)


def _gen_shared_methods(em: Emitter, t: StructType, names: list[str], fields: list,
                        zero: list[str]) -> None:
    """The methods both forms of a class share: comparison, values, validity of a union, a
    header's extract and emit (a struct's emit), and a header's `_zero` with the body `zero`
    (an invalid, all-zero header: each form resets its fields its own way)."""
    header = t.kind == "header"
    _gen_eq_values_of(em, names, fields, header)
    if t.kind == "header_union":
        _gen_union_validity(em, names)
    if header and t.varbit is not None:
        _gen_varbit_header_io(em, t, names)
    elif header:
        _gen_header_io(em, t, names)
    else:
        _gen_struct_emit(em, fields)
    if header:
        em.line("def _zero(self):")
        with em.indent():
            for line in zero:
                em.line(line)


def _gen_layout(em: Emitter, t: StructType) -> None:
    """After the class: a fixed-width header's packer and unpacker."""
    if t.kind == "header" and t.varbit is None:
        for line in struct_lines(t):
            em.line(line)
    em.line("")


def _gen_eq_values_of(em: Emitter, names: list[str], fields: list, header: bool) -> None:
    em.line("def _eq(self, o):")
    with em.indent():
        parts = []
        if header:
            em.line("if not self._valid and not o._valid: return True")
            parts.append("self._valid == o._valid")
        for n, ft in fields:
            parts.append(f"self.{n}._eq(o.{n})" if is_aggregate(ft) else f"self.{n} == o.{n}")
        em.line("return " + (" and ".join(parts) or "True"))
    em.line("def _values(self):")
    with em.indent():
        em.line("return (" + "".join(f"self.{n}, " for n in names) + ")")
    em.line("@classmethod")
    em.line("def _of(cls, vals):")
    with em.indent():
        em.line("c = cls()")
        if header:
            em.line("c._valid = True")
        for i, (n, ft) in enumerate(fields):
            if is_aggregate(ft):
                em.line(f"c.{n}._assign(vals[{i}])")
            else:
                em.line(f"c.{n} = vals[{i}]")
        em.line("return c")


def _gen_struct_emit(em: Emitter, fields: list) -> None:
    em.line("def _emit(self, out):")
    with em.indent():
        for n, ft in fields:
            if is_aggregate(ft):
                em.line(f"self.{n}._emit(out)")


def _gen_union_validity(em: Emitter, names: list[str]) -> None:
    """A union is valid when a member is; making it invalid invalidates every member."""
    em.line("@property")
    em.line("def _valid(self):")
    with em.indent():
        em.line("return " + " or ".join(f"self.{n}._valid" for n in names))
    em.line("@_valid.setter")
    em.line("def _valid(self, value):")
    with em.indent():
        em.line("if not value:")
        with em.indent():
            for n in names:
                em.line(f"self.{n}._valid = False")
    em.line("def _zero(self):")
    with em.indent():
        em.line("self._valid = False")


def _field_in(ft, raw: str) -> str:
    """A field's value from its raw bits."""
    if isinstance(ft, BoolType):
        return f"bool({raw})"
    if isinstance(ft, Bits) and ft.signed:
        return f"_signed({raw}, {ft.width})"
    return raw


def _field_out(ft, val: str) -> str:
    """A field's raw bits from its value."""
    if isinstance(ft, Bits) and ft.signed:
        return f"({val} & {hex(ft.mask)})"
    if isinstance(ft, BoolType):
        return f"int({val})"
    return val


def _gen_varbit_header_io(em: Emitter, t: StructType, names: list[str]) -> None:
    """A header with a varbit field: its size is known once the varbit's width is."""
    fixed = t.fixed_width
    assert t.varbit is not None  # the caller's header has one
    vb_index = [n for n, _ in t.fields].index(t.varbit)
    post = sum(bit_width(ft) for _, ft in t.fields[vb_index + 1:])
    em.line("def _extract(self, data, off, vbits):")
    with em.indent():
        em.line(f"total = {fixed} + vbits")
        em.line("v = int.from_bytes(data[off:off + (total >> 3)], 'big')")
        consumed = 0
        for i, (n, (_, ft)) in enumerate(zip(names, t.fields, strict=False)):
            if i < vb_index:
                w = bit_width(ft)
                consumed += w
                raw = f"((v >> (total - {consumed})) & {hex((1 << w) - 1)})"
                em.line(f"self.{n} = {_field_in(ft, raw)}")
            elif i == vb_index:
                em.line(f"self.{n} = ((v >> {post}) & ((1 << vbits) - 1), vbits)")
        shift = post
        for n, (_, ft) in list(zip(names, t.fields, strict=False))[vb_index + 1:]:
            w = bit_width(ft)
            shift -= w
            raw = f"((v >> {shift}) & {hex((1 << w) - 1)})"
            em.line(f"self.{n} = {_field_in(ft, raw)}")
        em.line("self._valid = True")
    em.line("def _bits(self):")
    with em.indent():
        vb = names[vb_index]
        em.line(f"vb, vn = self.{vb}")
        em.line(f"total = {fixed} + vn")
        parts = []
        consumed = 0
        for i, (n, (_, ft)) in enumerate(zip(names, t.fields, strict=False)):
            if i < vb_index:
                consumed += bit_width(ft)
                parts.append(f"({_field_out(ft, 'self.' + n)} << (total - {consumed}))")
            elif i == vb_index:
                parts.append(f"(vb << {post})")
        shift = post
        for n, (_, ft) in list(zip(names, t.fields, strict=False))[vb_index + 1:]:
            shift -= bit_width(ft)
            parts.append(f"({_field_out(ft, 'self.' + n)} << {shift})")
        em.line(f"return {' | '.join(parts)}, total")
    em.line("def _emit(self, out):")
    with em.indent():
        em.line("if self._valid:")
        with em.indent():
            em.line("bits, total = self._bits()")
            em.line("out += bits.to_bytes(total >> 3, 'big')")


def _leaves(path: str, t: StructType) -> list:
    """(attribute path, type) of every bit field, nested structs flattened in order."""
    out = []
    for n, ft in t.fields:
        p = f"{path}.{py_ident(n)}"
        if isinstance(ft, StructType):
            out.extend(_leaves(p, ft))
        else:
            out.append((p, ft))
    return out


def _layout(t: StructType, h: str) -> list[Unit] | None:
    leaves = [(n, ft, bit_width(ft)) for n, ft in _leaves(h, t)]
    return units(leaves) if leaves else None


def _field_from(ft, raw: str, n: str, w: int, x: str) -> list[str]:
    """Statements setting field `n` from its raw bits `raw` (`x`: a temporary)."""
    if isinstance(ft, BoolType):
        return [f"{n} = bool({raw})"]
    if isinstance(ft, Bits) and ft.signed:
        return [f"{x} = {raw}", f"{n} = {x} - {1 << w} if {x} >> {w - 1} else {x}"]
    return [f"{n} = {raw}"]


def _slice(value: str, shift: int, w: int, total: int) -> str:
    """Bits [shift, shift + w) of the `total`-bit integer `value`."""
    raw = f"({value} >> {shift})" if shift else value
    return f"({raw} & {hex((1 << w) - 1)})" if shift + w < total else raw


def extract_lines(t: StructType, h: str, data: str, off: str, v: str = "v", x: str = "x"
                  ) -> list[str]:
    """Statements that extract fixed-width header `t` into the object `h` from bytes `data`
    at byte offset `off` (bounds already checked), as the header's `_extract` does; `v` and
    `x` name the temporaries. One `unpack_from` of the header's layout (`layout.py`)."""
    layout = _layout(t, h)
    if layout is None:
        lines = [f"{v} = int.from_bytes({data}[{off}:{off} + {t.width // 8}], 'big')"]
        shift = t.width
        for n, ft in _leaves(h, t):
            w = bit_width(ft)
            shift -= w
            lines += _field_from(ft, _slice(v, shift, w, t.width), n, w, x)
        return [*lines, f"{h}._valid = True"]
    names = [f"{v}{k}" for k in range(len(layout))]
    lines = [f"{', '.join(names)}, = _U_{class_name(t)}({data}, {off})"]
    for name, unit in zip(names, layout, strict=True):
        value = name if unit.native else f"int.from_bytes({name}, 'big')"
        if not unit.native and len(unit.leaves) > 1:
            lines.append(f"{name} = {value}")
            value = name
        total = shift = unit.nbytes * 8
        for n, ft, w in unit.leaves:
            shift -= w
            lines += _field_from(ft, _slice(value, shift, w, total), n, w, x)
    return [*lines, f"{h}._valid = True"]


def pack_expr(t: StructType, h: str) -> str:
    """The fixed-width header `h` as bytes: one `pack` of its layout."""
    layout = _layout(t, h)
    if layout is None:
        return f"({bits_expr(t, h)}).to_bytes({t.width // 8}, 'big')"
    args = [unit_value(u, [_field_out(ft, n) for n, ft, _ in u.leaves]) for u in layout]
    return f"_P_{class_name(t)}({', '.join(args)})"


def struct_lines(t: StructType) -> list[str]:
    """Module-level packer and unpacker of a fixed-width header's layout, if it has one."""
    layout = _layout(t, "self")
    if layout is None:
        return []
    fmt = struct_format(layout)
    cls = class_name(t)
    return [f"_U_{cls} = _Struct({fmt!r}).unpack_from", f"_P_{cls} = _Struct({fmt!r}).pack"]


def bits_expr(t: StructType, h: str) -> str:
    """The fixed-width header `h`'s fields as one integer, first field in the top bits."""
    parts = []
    shift = t.width
    for n, ft in _leaves(h, t):
        w = bit_width(ft)
        shift -= w
        val = n
        if isinstance(ft, Bits) and ft.signed:
            val = f"({val} & {hex((1 << w) - 1)})"
        elif isinstance(ft, BoolType):
            val = f"int({val})"
        parts.append(f"({val} << {shift})" if shift else val)
    return " | ".join(parts) or "0"


def _gen_header_io(em: Emitter, t: StructType, names: list[str]) -> None:
    nbytes = t.width // 8
    em.line(f"_nbytes = {nbytes}")
    em.line("def _extract(self, data, off):")
    with em.indent():
        for line in extract_lines(t, "self", "data", "off"):
            em.line(line)
    em.line("def _bits(self):")
    with em.indent():
        em.line("return " + bits_expr(t, "self"))
    em.line("def _emit(self, out):")
    with em.indent():
        em.line("if self._valid:")
        with em.indent():
            em.line(f"out += {pack_expr(t, 'self')}")

