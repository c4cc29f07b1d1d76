"""The program's data types as C structs.

    bit<W>, W <= 64    uint64_t (int<W>: int64_t, sign-extended)
    bit<W>, W > 64     uint8_t[(W + 7) / 8], big-endian, the value in the low bits
    bool               uint8_t
    error, enum        uint32_t (serializable enums: uint64_t, their raw bits, as Python has them)
    varbit<M>          p4_varbit_M_t: `nbits` and the value as a right-aligned byte array
    header             `valid_` (a byte), then its fields in declaration order
    header union       its member headers
    header stack       `items[N]` and `next_index`

Type names: p4_h_NAME_t (headers), p4_u_NAME_t (unions), p4_s_NAME_t (structs),
p4_stack_NAME_N_t (stacks). `dump_slots` gives the order in which tests read the fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.types import (
    Bits,
    BoolType,
    EnumType,
    ErrorType,
    P4Type,
    StackType,
    StructType,
    Varbit,
)

from .emitter import c_ident

_PREFIX = {"header": "p4_h_", "header_union": "p4_u_", "struct": "p4_s_"}


def wide(t: object) -> bool:
    """A bit<W> held as a byte array (W > 64)."""
    return isinstance(t, Bits) and t.width > 64


def nbytes(width: int) -> int:
    return (width + 7) // 8


def nwords(width: int) -> int:
    return max(1, (width + 63) // 64)


def scalar_ctype(t: P4Type) -> str | None:
    """The C type of a value of t held in a uint64_t-sized scalar, or None."""
    if isinstance(t, Bits) and t.width <= 64:
        return "int64_t" if t.signed else "uint64_t"
    if isinstance(t, BoolType):
        return "uint8_t"
    if isinstance(t, EnumType):  # a serializable one holds its raw bits, as in Python
        return "uint32_t" if t.width is None else "uint64_t"
    if isinstance(t, ErrorType):
        return "uint32_t"
    return None


class CTypes:
    """The C typedefs of the types the program's code uses, each declared once, after the
    types it contains."""

    def __init__(self) -> None:
        self.decls: list[str] = []
        self._names: dict[object, str] = {}
        self._taken: set[str] = set()

    def name(self, t: StructType | StackType | Varbit) -> str:
        """The C type of an aggregate (or varbit), declared on first use."""
        key: object = self._key(t) if isinstance(t, (StackType, Varbit)) else id(t)
        name = self._names.get(key)
        if name is not None:
            return name
        if isinstance(t, Varbit):
            name = self._unique(f"p4_varbit_{t.max_width}_t")
            self.decls += [f"typedef struct {{ uint32_t nbits; uint8_t value[{nbytes(t.max_width)}]; }} "
                           f"{name};", ""]
        elif isinstance(t, StackType):
            elem = self.name(t.elem)
            name = self._unique(f"p4_stack_{_base(t.elem.name)}_{t.size}_t")
            self.decls += [f"typedef struct {{ {elem} items[{t.size}]; uint32_t next_index; }} "
                           f"{name};", ""]
        else:
            body = [self.field(n, ft, t) for n, ft in t.fields]  # dependencies first
            name = self._unique(f"{_PREFIX[t.kind]}{_base(t.name)}_t")
            if t.kind == "header":
                body.insert(0, "uint8_t valid_;")
            if not body:
                body = ["uint8_t empty_;  /* C has no empty structs */"]
            self.decls += [f"typedef struct {{  /* {t.kind} {t.name} */",
                           *("    " + line for line in body), f"}} {name};", ""]
        self._names[key] = name
        return name

    def field(self, fname: str, ft: P4Type, owner: StructType) -> str:
        """The declaration of a field of `owner`."""
        n = c_ident(fname)
        ctype = scalar_ctype(ft)
        if ctype is not None:
            return f"{ctype} {n};"
        if wide(ft):
            assert isinstance(ft, Bits)
            return f"uint8_t {n}[{nbytes(ft.width)}];  /* {ft} */"
        if isinstance(ft, (StructType, StackType, Varbit)):
            return f"{self.name(ft)} {n};"
        raise UnsupportedConstruct(None, f"field {owner.name}.{fname} of type {ft} in C")

    def local(self, t: P4Type) -> str:
        """The C type of a local variable of type t."""
        ctype = scalar_ctype(t)
        if ctype is not None:
            return ctype
        if isinstance(t, (StructType, StackType)):
            return self.name(t)
        raise UnsupportedConstruct(None, f"a local of type {t} in C")

    @staticmethod
    def _key(t: StackType | Varbit) -> tuple:
        return ("varbit", t.max_width) if isinstance(t, Varbit) else ("stack", id(t.elem), t.size)

    def _unique(self, name: str) -> str:
        base, k = name, 1
        while name in self._taken:
            k += 1
            name = f"{base[:-2]}_{k}_t"
        self._taken.add(name)
        return name


def _base(name: str) -> str:
    """A type's name in its C name: `headers_t` -> p4_s_headers_t."""
    return re.sub(r"\W", "_", name.removesuffix("_t"))


# ---- the field dump ----------------------------------------------------------------------
@dataclass(frozen=True)
class Slot:
    """One run of 64-bit words of the dump: `path` (P4 field names; "$valid" a header's
    validity, "$next_index" a stack's, "$nbits" a varbit's width), its type, and its words
    (a value wider than 64 bits, or a varbit's, takes several, the most significant first)."""

    path: tuple[str | int, ...]
    type: P4Type | None
    words: int


def dump_slots(t: P4Type, path: tuple[str | int, ...] = ()) -> list[Slot]:
    """Every field of a value of type t in declaration order: a header's validity before its
    fields, a stack's elements before its next_index, a varbit's width before its value.
    int<W> gives its sign-extended 64-bit two's complement, bool 0/1, error its number."""
    if isinstance(t, StructType):
        out = [Slot((*path, "$valid"), None, 1)] if t.kind == "header" else []
        for n, ft in t.fields:
            out += dump_slots(ft, (*path, n))
        return out
    if isinstance(t, StackType):
        out = []
        for i in range(t.size):
            out += dump_slots(t.elem, (*path, i))
        return [*out, Slot((*path, "$next_index"), None, 1)]
    if isinstance(t, Varbit):
        return [Slot((*path, "$nbits"), None, 1), Slot(path, t, nwords(t.max_width))]
    return [Slot(path, t, nwords(t.width) if isinstance(t, Bits) else 1)]
