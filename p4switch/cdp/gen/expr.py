"""Expressions of the typed IR -> C expressions, with P4's semantics exactly as the Python
pipeline computes them (p4switch/backend/expr.py and rt.py):

- bit<W> arithmetic wraps to W bits; int<W> is sign-extended from bit W-1 after each operation
  (computed on uint64_t, so nothing overflows in C);
- `<<` by W or more gives 0, `>>` by 64 or more 0 (int<W>: the sign);
- |+| and |-| saturate at the type's bounds; `/` and `%` by zero give 0;
- a slice, a concatenation and a cast mask or sign-extend as the Python pipeline does.

Every expression of type bit<W> (W <= 64) comes out as a uint64_t, int<W> as an int64_t, bool
as an int 0/1. Values wider than 64 bits, aggregates other than field paths, and calls other
than isValid and the stage's externs are UnsupportedConstruct.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch.backend.env import Env
from p4switch.frontend import ast as A
from p4switch.frontend.diagnostics import Pos, UnsupportedConstruct
from p4switch.frontend.symbols import ConstSym
from p4switch.frontend.types import (
    Bits,
    BoolType,
    EnumType,
    IntLit,
    P4Type,
    StackType,
    StructType,
    TupleType,
    bit_width,
)

from .emitter import c_ident
from .types import scalar_ctype, wide

if TYPE_CHECKING:
    from .context import CContext


def literal(value: object, t: P4Type | None, pos: Pos | None = None) -> str:
    """A constant of type t as a C expression (uint64_t, int64_t or an int 0/1)."""
    if isinstance(value, bool) or isinstance(t, BoolType):
        return "1" if value else "0"
    if not isinstance(value, int):
        raise UnsupportedConstruct(pos, f"the constant {value!r} in C")
    if wide(t):
        raise UnsupportedConstruct(pos, f"{t} values in C expressions")
    signed = _signed(t) or value < 0
    if signed:
        if not -(1 << 63) <= value < 1 << 63:
            raise UnsupportedConstruct(pos, f"the constant {value} in C (beyond 64 bits)")
        return "INT64_MIN" if value == -(1 << 63) else f"INT64_C({value})"
    if value >= 1 << 64:
        raise UnsupportedConstruct(pos, f"the constant {value} in C (beyond 64 bits)")
    return f"UINT64_C({hex(value) if value > 9 else value})"


def mask(w: int) -> str:
    return f"UINT64_C({hex((1 << w) - 1)})"


def member(base: str, name: str) -> str:
    """Field `name` (a P4 name) of `base`."""
    return dot(base, c_ident(name))


def dot(base: str, cname: str) -> str:
    """`base.cname`, as `p->cname` when base is `(*p)`."""
    if base.startswith("(*") and base.endswith(")") and base[2:-1].isidentifier():
        return f"{base[2:-1]}->{cname}"
    return f"{base}.{cname}"


def _signed(t: P4Type | None) -> bool:
    """int<W>; a serializable enum over int<W> holds its raw bits, as in the Python pipeline."""
    return isinstance(t, Bits) and t.signed


class CExprGen:
    """Expressions -> C expressions."""

    def __init__(self, ctx: CContext) -> None:
        self.ctx = ctx

    def ex(self, e: A.Expr, env: Env) -> str:
        pre = self.ctx.pre.get(id(e))
        if pre is not None:
            return pre
        if e.const is not None and not isinstance(e.type, (StructType, TupleType)):
            return literal(e.const, e.type, e.pos)
        handler = getattr(self, "_x_" + type(e).__name__, None)
        if handler is None:
            raise UnsupportedConstruct(e.pos, f"{type(e).__name__} expressions in C")
        return handler(e, env)

    def _scalar(self, e: A.Expr) -> None:
        """Refuse what C cannot hold in a 64-bit scalar."""
        t = e.type
        if wide(t):
            raise UnsupportedConstruct(e.pos, f"{t} values in C expressions")

    # ---- names and fields ------------------------------------------------------------------
    def _x_Name(self, e: A.Name, env: Env) -> str:
        sym = e.ref
        if isinstance(sym, ConstSym):
            return literal(sym.value, sym.type, e.pos)
        v = env.get(sym)
        if v is None:
            raise UnsupportedConstruct(e.pos, f"reference to '{e.name}' here in C")
        return v

    def _x_Member(self, e: A.Member, env: Env) -> str:
        ref = e.ref
        if isinstance(e.expr, A.Call) and e.expr.kind == "table_apply":
            applied = self.ctx.applied.get(id(e.expr))
            if applied is None:
                raise UnsupportedConstruct(e.pos, "a table apply result here in C")
            hit, act = applied
            if e.name in ("hit", "miss", "action_run"):
                return {"hit": f"({hit} != 0)", "miss": f"({hit} == 0)", "action_run": act}[e.name]
            raise UnsupportedConstruct(e.pos, f"table apply result {e.name} in C")
        if isinstance(ref, tuple) and ref[0] == "stack":
            st = e.expr.type
            assert isinstance(st, StackType)  # the checker bound a stack member
            base = self.ex(e.expr, env)
            if ref[1] in ("next", "last"):
                if not self.ctx.in_parser:
                    raise UnsupportedConstruct(e.pos, f"stack.{ref[1]} outside a parser in C")
                index = f"(int64_t){base}.next_index" + (" - 1" if ref[1] == "last" else "")
                self.ctx.checked += 1  # out of range: StackOutOfBounds after the expression
                return f"{base}.items[p4_checked({index}, {st.size}, &bad_index)]"
            if ref[1] == "lastIndex":
                return f"(((uint64_t){base}.next_index - 1) & UINT64_C(0xffffffff))"
            if ref[1] == "nextIndex":
                return f"(uint64_t){base}.next_index"
        if isinstance(e.expr.type, StructType):
            if isinstance(e.ref, tuple):
                raise UnsupportedConstruct(e.pos, f"method {e.name} as a value")
            return member(self.ex(e.expr, env), e.name)
        raise UnsupportedConstruct(e.pos, f"member '{e.name}' here in C")

    def _x_Index(self, e: A.Index, env: Env) -> str:
        if isinstance(e.expr.type, StackType) and e.index.const is not None:
            return f"{self.ex(e.expr, env)}.items[{e.index.const}]"
        raise UnsupportedConstruct(e.pos, "indexing with a run-time index in C")

    def _x_Slice(self, e: A.Slice, env: Env) -> str:
        self._scalar(e.expr)
        t = e.expr.type
        hi, lo = e.hi.const, e.lo.const
        base = self.ex(e.expr, env)
        if _signed(t):
            base = f"(uint64_t){base}"
        shifted = f"({base} >> {lo})" if lo else base
        if isinstance(t, Bits) and not t.signed and hi == t.width - 1:
            return shifted if lo else base
        return f"({shifted} & {mask(hi - lo + 1)})"

    # ---- operators -----------------------------------------------------------------------
    def _x_Binary(self, e: A.Binary, env: Env) -> str:
        op, t = e.op, e.type
        for side in (e.left, e.right):
            self._scalar(side)
            if scalar_ctype(side.type) is None and not isinstance(side.type, IntLit):
                raise UnsupportedConstruct(e.pos, f"{op} on {side.type} in C")
        a, b = self.ex(e.left, env), self.ex(e.right, env)
        if op in ("&&", "||", "==", "!=", "<", ">", "<=", ">="):
            return f"({a} {op} {b})"
        if not isinstance(t, Bits):
            raise UnsupportedConstruct(e.pos, f"operator {op} on {t} in C")
        self._scalar(e)
        w, sw = t.width, t.signed
        if op == "++":
            rw = bit_width(e.right.type)
            la = f"((uint64_t){a} & {mask(bit_width(e.left.type))})" if _signed(e.left.type) \
                else a
            rb = f"((uint64_t){b} & {mask(rw)})" if _signed(e.right.type) else b
            r = f"(({la} << {rw}) | {rb})"
            return f"p4_sext({r}, {w})" if sw else r
        if op == "<<":
            if e.right.const is not None:
                if e.right.const >= w:
                    return literal(0, t)
                if sw:
                    return f"p4_sext((uint64_t){a} << {e.right.const}, {w})"
                return f"(({a} << {e.right.const}) & {mask(w)})"
            return f"p4_shl_s({a}, {b}, {w})" if sw else f"p4_shl({a}, {b}, {w})"
        if op == ">>":
            if e.right.const is not None:
                n = e.right.const
                if sw:
                    return f"({a} >> {min(n, 63)})"
                return f"({a} >> {n})" if n < 64 else literal(0, t)
            return f"p4_shr_s({a}, {b})" if sw else f"p4_shr({a}, {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "|+|":
            return f"p4_sat_add_s({a}, {b}, {w})" if sw else f"p4_sat_add({a}, {b}, {mask(w)})"
        if op == "|-|":
            return f"p4_sat_sub_s({a}, {b}, {w})" if sw else f"p4_sat_sub({a}, {b})"
        if op in ("/", "%"):
            if sw:  # the checker refuses these; never guess at their rounding
                raise UnsupportedConstruct(e.pos, f"{op} on {t}")
            return f"p4_{'div' if op == '/' else 'mod'}({a}, {b})"
        if op in ("+", "-", "*"):
            if sw:
                return f"p4_sext((uint64_t){a} {op} (uint64_t){b}, {w})"
            return f"(({a} {op} {b}) & {mask(w)})" if w < 64 else f"({a} {op} {b})"
        raise UnsupportedConstruct(e.pos, f"operator {op} in C")

    def _x_Unary(self, e: A.Unary, env: Env) -> str:
        self._scalar(e.expr)
        a, t = self.ex(e.expr, env), e.type
        if e.op == "!":
            return f"(!{a})"
        if e.op == "+":
            return a
        if not isinstance(t, Bits):
            raise UnsupportedConstruct(e.pos, f"operator {e.op} on {t} in C")
        if e.op == "~":
            return f"(~{a})" if t.signed else f"({a} ^ {mask(t.width)})"
        if e.op == "-":
            if t.signed:
                return f"p4_sext(0 - (uint64_t){a}, {t.width})"
            return f"((0 - {a}) & {mask(t.width)})"
        raise UnsupportedConstruct(e.pos, f"operator {e.op} in C")

    def _x_Cast(self, e: A.Cast, env: Env) -> str:
        src, dst = e.expr.type, e.type
        self._scalar(e.expr)
        self._scalar(e)
        if isinstance(dst, (StructType, TupleType, StackType)):
            raise UnsupportedConstruct(e.pos, f"a cast to {dst} in C")
        a = self.ex(e.expr, env)
        if isinstance(dst, BoolType):
            return f"({a} != 0)"
        if isinstance(src, BoolType):
            return f"(uint64_t){a}"
        if isinstance(dst, IntLit):
            return a
        dw = bit_width(dst)
        if _signed(dst):
            return f"p4_sext((uint64_t){a}, {dw})"
        sw = bit_width(src) if isinstance(src, (Bits, EnumType)) and \
            not (isinstance(src, EnumType) and src.width is None) else None
        if sw is not None and sw <= dw and not _signed(src):
            return a
        return f"((uint64_t){a} & {mask(dw)})" if dw < 64 else f"(uint64_t){a}"

    def _x_Cond(self, e: A.Cond, env: Env) -> str:
        self._scalar(e)
        if isinstance(e.type, (StructType, StackType, TupleType)):
            raise UnsupportedConstruct(e.pos, f"?: on {e.type} in C")
        return f"({self.ex(e.cond, env)} ? {self.ex(e.then, env)} : {self.ex(e.other, env)})"

    # ---- calls -----------------------------------------------------------------------------
    def _x_Call(self, e: A.Call, env: Env) -> str:
        f = e.func
        if e.kind == "header_method" and isinstance(f, A.Member) and f.name == "isValid":
            return self.valid(f.expr, env)
        if e.kind in ("extern_method", "extern_func"):
            handler = self.ctx.externs.get(extern_key(e))
            if handler is not None:
                return handler(e, env)
            raise UnsupportedConstruct(e.pos, f"{extern_key(e)} here in C")
        raise UnsupportedConstruct(e.pos, f"a call of kind {e.kind} in a C expression")

    def valid(self, h: A.Expr, env: Env) -> str:
        """isValid() of a header or a header union (any member valid)."""
        base = self.ex(h, env)
        t = h.type
        if isinstance(t, StructType) and t.kind == "header_union":
            return "(" + " || ".join(f"{member(base, n)}.valid_" for n, _ in t.fields) + ")"
        return dot(base, "valid_")


def extern_key(c: A.Call) -> str:
    """"extern.method" or "function": how a stage's `externs` name what the call calls."""
    f = c.func
    if c.kind == "extern_method":
        assert isinstance(f, A.Member)  # `obj.method(...)`
        return f"{f.expr.type.decl.name}.{f.name}"
    assert isinstance(f, A.Name)  # an extern function is called by its name
    return f.name
