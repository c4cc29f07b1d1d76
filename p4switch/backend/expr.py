"""Expressions of the typed IR -> Python expressions (a generator over the shared `GenContext`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..frontend import ast as A
from ..frontend.diagnostics import UnsupportedConstruct
from ..frontend.symbols import ConstSym
from ..frontend.types import (
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
from .emitter import py_ident
from .env import Env
from .structs import class_name, is_aggregate

if TYPE_CHECKING:
    from .context import GenContext


def literal(value, t: P4Type | None = None) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        if isinstance(t, BoolType):
            return "True" if value else "False"
        return hex(value) if value > 9 else str(value)
    if isinstance(value, str):
        return repr(value)
    raise TypeError(f"no literal for {value!r}")


def _mask(w: int) -> str:
    return hex((1 << w) - 1)


class ExprGen:
    """Expressions -> Python expressions."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    def ex(self, e: A.Expr, env: Env) -> str:
        pre = self.ctx.pre.get(id(e))
        if pre is not None:
            return pre
        if e.const is not None and not isinstance(e.type, (StructType, TupleType)):
            return literal(e.const, e.type)
        return getattr(self, "_x_" + type(e).__name__)(e, env)

    def _x_Name(self, e: A.Name, env: Env) -> str:
        sym = e.ref
        if isinstance(sym, ConstSym):
            return literal(sym.value, sym.type)
        v = env.get(sym)
        if v is None:
            raise UnsupportedConstruct(e.pos, f"reference to '{e.name}' here")
        return v if isinstance(v, str) else v.pyname

    def _x_Member(self, e: A.Member, env: Env) -> str:
        ref = e.ref
        if isinstance(e.expr, A.Call) and e.expr.kind == "table_apply":
            hit, action = e.expr.hoisted
            return {"hit": hit, "miss": f"(not {hit})", "action_run": action}[e.name]
        if isinstance(ref, tuple) and ref[0] == "stack":
            base = self.ex(e.expr, env)
            if ref[1] in ("next", "last"):
                index = f"{base}.next_index" + (" - 1" if ref[1] == "last" else "")
                if self.ctx.in_parser:  # out of range: the parser stops with StackOutOfBounds
                    return f"{base}.checked({index}, {self.ctx.program.error_code('StackOutOfBounds')})"
                return f"{base}.at({index})"
            if ref[1] in ("lastIndex",):
                return f"(({base}.next_index - 1) & 0xffffffff)"
            if ref[1] == "nextIndex":
                return f"{base}.next_index"
        if isinstance(e.expr.type, StructType):
            return f"{self.ex(e.expr, env)}.{py_ident(e.name)}"
        raise UnsupportedConstruct(e.pos, f"member '{e.name}' here")

    def _x_Index(self, e: A.Index, env: Env) -> str:
        if isinstance(e.expr.type, StackType):
            if e.index.const is not None:
                return f"{self.ex(e.expr, env)}.items[{e.index.const}]"
            return f"{self.ex(e.expr, env)}.at({self.ex(e.index, env)})"
        return f"{self.ex(e.expr, env)}[{self.ex(e.index, env)}]"

    def _x_Slice(self, e: A.Slice, env: Env) -> str:
        hi, lo = e.hi.const, e.lo.const
        base = self.ex(e.expr, env)
        shifted = f"({base} >> {lo})" if lo else base
        return f"({shifted} & {_mask(hi - lo + 1)})"

    def _x_Binary(self, e: A.Binary, env: Env) -> str:
        op = e.op
        a, b = self.ex(e.left, env), self.ex(e.right, env)
        t = e.type
        if op == "&&":
            return f"({a} and {b})"
        if op == "||":
            return f"({a} or {b})"
        if op in ("==", "!="):
            lt = e.left.type
            if is_aggregate(lt) or isinstance(lt, TupleType):
                eq = f"{a}._eq({b})" if is_aggregate(lt) else f"({a} == {b})"
                return eq if op == "==" else f"(not {eq})"
            return f"({a} {op} {b})"
        if op in ("<", ">", "<=", ">="):
            return f"({a} {op} {b})"
        if not isinstance(t, Bits):
            raise UnsupportedConstruct(e.pos, f"operator {op} on {t}")
        w, m = t.width, _mask(t.width)
        sw = t.signed
        if op == "++":
            rw = bit_width(e.right.type)
            la = f"({a} & {_mask(bit_width(e.left.type))})" if e.left.type.signed else a
            rb = f"({b} & {_mask(rw)})" if e.right.type.signed else b
            r = f"(({la} << {rw}) | {rb})"
            return f"_signed({r}, {w})" if sw else r
        if op == "<<":
            if e.right.const is not None:
                if e.right.const >= w:
                    return "0"
                return f"_signed({a} << {e.right.const}, {w})" if sw else \
                    f"(({a} << {e.right.const}) & {m})"
            return f"_shl_signed({a}, {b}, {w})" if sw else f"_shl({a}, {b}, {w})"
        if op == ">>":
            return f"({a} >> {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "|+|":
            if sw:
                return f"max(min({a} + {b}, {(1 << (w - 1)) - 1}), {-(1 << (w - 1))})"
            return f"min({a} + {b}, {m})"
        if op == "|-|":
            if sw:
                return f"max(min({a} - {b}, {(1 << (w - 1)) - 1}), {-(1 << (w - 1))})"
            return f"max({a} - {b}, 0)"
        if op == "/":
            return f"_div({a}, {b})"
        if op == "%":
            return f"_mod({a}, {b})"
        if sw:
            return f"_signed({a} {op} {b}, {w})"
        return f"(({a} {op} {b}) & {m})"

    def _x_Unary(self, e: A.Unary, env: Env) -> str:
        a = self.ex(e.expr, env)
        t = e.type
        if e.op == "!":
            return f"(not {a})"
        if e.op == "+":
            return a
        if not isinstance(t, Bits):
            raise UnsupportedConstruct(e.pos, f"operator {e.op} on {t}")
        if e.op == "~":
            return f"(~{a})" if t.signed else f"({a} ^ {_mask(t.width)})"
        return f"_signed(-{a}, {t.width})" if t.signed else f"((-{a}) & {_mask(t.width)})"

    def _x_Cast(self, e: A.Cast, env: Env) -> str:
        src, dst = e.expr.type, e.type
        if isinstance(dst, (StructType, TupleType)):
            return self.ex(e.expr, env)
        a = self.ex(e.expr, env)
        if isinstance(dst, BoolType):
            return f"bool({a})"
        if isinstance(src, BoolType):
            return f"int({a})"
        dw = bit_width(dst) if not isinstance(dst, IntLit) else None
        if dw is None:
            return a
        dsigned = isinstance(dst, Bits) and dst.signed
        if dsigned:
            return f"_signed({a}, {dw})"
        ssigned = isinstance(src, Bits) and src.signed
        sw = bit_width(src) if isinstance(src, (Bits, EnumType)) else None
        if sw is not None and sw <= dw and not ssigned:
            return a
        return f"({a} & {_mask(dw)})"

    def _x_Cond(self, e: A.Cond, env: Env) -> str:
        return f"({self.ex(e.then, env)} if {self.ex(e.cond, env)} else {self.ex(e.other, env)})"

    def _x_ListExpr(self, e: A.ListExpr, env: Env) -> str:
        t = e.type
        items = [self.ex(i, env) for i in e.items]
        if isinstance(t, StructType):
            return f"{class_name(t)}._of(({''.join(i + ', ' for i in items)}))"
        if isinstance(t, StackType):
            return f"HeaderStack([{', '.join(i + '._copy()' for i in items)}])"
        return "(" + "".join(i + ", " for i in items) + ")"

    def _x_StructInit(self, e: A.StructInit, env: Env) -> str:
        t = e.type
        if not isinstance(t, StructType):
            raise UnsupportedConstruct(e.pos, "struct initializer without a known struct type")
        vals = dict(e.fields)
        items = [self.ex(vals[n], env) for n, _ in t.fields]
        return f"{class_name(t)}._of(({''.join(i + ', ' for i in items)}))"

    def _x_Call(self, e: A.Call, env: Env) -> str:
        return self.ctx.call.call_expr(e, env)

    def _x_Const(self, e, env) -> str:
        return literal(e.const, e.type)

    def _x_BoolLit(self, e, env) -> str:
        return literal(e.value)
