"""Statements -> C (as backend/stmt.py for the Python back end): declarations, assignments
(scalars, slices, whole headers and structs), if, blocks, header validity, and the calls the
current stage's `externs` generate. Anything else is UnsupportedConstruct.

In a parser, a stack access out of range (`last` on an empty stack) stops the parser with
StackOutOfBounds before the statement has any effect, as the Python pipeline raises it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch.backend.env import Env
from p4switch.frontend import ast as A
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.types import Bits, StackType, StructType, Varbit

from .expr import dot, extern_key, mask, member
from .types import scalar_ctype, wide

if TYPE_CHECKING:
    from .context import CContext


class CStmtGen:
    """Statements."""

    def __init__(self, ctx: CContext) -> None:
        self.ctx = ctx

    def block(self, stmts: list[A.Stmt], env: Env) -> None:
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s: A.Stmt, env: Env) -> None:
        handler = getattr(self, "_g_" + type(s).__name__, None)
        if handler is None:
            raise UnsupportedConstruct(s.pos, f"{type(s).__name__} statements in C")
        handler(s, env)

    def value(self, e: A.Expr, env: Env) -> str:
        """`e` as a C expression; in a parser, one that reads a stack out of range is computed
        into a temporary first and the parser stops there with StackOutOfBounds."""
        before = self.ctx.checked
        v = self.ctx.expr.ex(e, env)
        if self.ctx.checked == before:
            return v
        ctype = scalar_ctype(e.type)
        if ctype is None:
            raise UnsupportedConstruct(e.pos, f"a {e.type} value read through stack.last/next")
        tmp = self.ctx.em.declare(ctype, "v")
        self.ctx.em.line(f"{tmp} = {v};")
        self.ctx.em.line(f"if (bad_index) {self.ctx.fail_with(self.ctx.error_code('StackOutOfBounds'))}")
        return tmp

    # ---- statements ------------------------------------------------------------------------
    def _g_Empty(self, s: A.Empty, env: Env) -> None:
        pass

    def _g_ConstDecl(self, s: A.ConstDecl, env: Env) -> None:
        pass

    def _g_Block(self, s: A.Block, env: Env) -> None:
        self.block(s.stmts, Env(env))

    def _g_VarDecl(self, s: A.VarDecl, env: Env) -> None:
        t = s.sym.type
        if wide(t):
            raise UnsupportedConstruct(s.pos, f"a local of type {t} in C")
        try:
            ctype = self.ctx.types.local(t)
        except UnsupportedConstruct as e:
            raise UnsupportedConstruct(s.pos, e.what) from None
        aggregate = isinstance(t, (StructType, StackType))
        name = self.ctx.em.declare(ctype, s.name, "{0}" if aggregate else "0")
        env.bind(s.sym, name)
        if s.init is not None:
            self.assign(s.pos, name, t, s.init, env)
        elif aggregate:  # each run of the declaration starts from zero (invalid headers)
            self.ctx.em.line(f"memset(&{name}, 0, sizeof {name});")
        else:
            self.ctx.em.line(f"{name} = 0;")

    def _g_Assign(self, s: A.Assign, env: Env) -> None:
        lhs = s.lhs
        if not isinstance(lhs, A.Slice):
            self.assign(s.pos, lhs, lhs.type, s.rhs, env)
            return
        bt = lhs.expr.type
        if not isinstance(bt, Bits) or wide(bt):
            raise UnsupportedConstruct(s.pos, f"assigning a slice of {bt} in C")
        value = self.value(s.rhs, env)
        target = self.lvalue(lhs.expr, env)
        hi, lo = lhs.hi.const, lhs.lo.const
        m = (1 << (hi - lo + 1)) - 1
        keep = f"UINT64_C({hex(~(m << lo) & bt.mask)})"
        part = f"((uint64_t){value} & {mask(hi - lo + 1)})"
        new = f"(((uint64_t){target} & {keep}) | {f'({part} << {lo})' if lo else part})"
        self.ctx.em.line(f"{target} = {f'p4_sext({new}, {bt.width})' if bt.signed else new};")

    def assign(self, pos, lhs: A.Expr | str, t, rhs: A.Expr, env: Env) -> None:
        """lhs (an lvalue, or a C variable) = rhs, the right side evaluated first: a scalar,
        or a whole header, struct or stack copied (a union member made valid invalidates its
        siblings)."""
        if wide(t) or isinstance(t, Varbit):
            raise UnsupportedConstruct(pos, f"assigning a {t} in C")
        if isinstance(t, (StructType, StackType)):
            if not isinstance(rhs, (A.Name, A.Member, A.Index)):
                if isinstance(rhs, A.Call):  # its own refusal says more
                    self.ctx.expr.ex(rhs, env)
                raise UnsupportedConstruct(pos, f"assigning a computed {t} in C")
            value = self.lvalue(rhs, env)
        else:
            value = self.value(rhs, env)
        target = lhs if isinstance(lhs, str) else self.lvalue(lhs, env)
        self.ctx.em.line(f"{target} = {value};")
        if not isinstance(lhs, str) and union_member(lhs):
            with self.ctx.em.block(f"if ({target}.valid_)"):
                self.invalidate_siblings(lhs, env)

    def lvalue(self, e: A.Expr, env: Env) -> str:
        """The C lvalue of a P4 lvalue; in a parser, a stack element out of range stops it
        with StackOutOfBounds before anything is written."""
        before = self.ctx.checked
        target = self.ctx.expr.ex(e, env)
        if self.ctx.checked == before:
            return target
        self.ctx.em.line(f"(void)&{target};")  # p4_checked ran: bad_index is set if out of range
        self.ctx.em.line(f"if (bad_index) {self.ctx.fail_with(self.ctx.error_code('StackOutOfBounds'))}")
        return target

    def _g_If(self, s: A.If, env: Env) -> None:
        if isinstance(s.cond.const, bool):  # a constant condition: only the branch taken
            taken = s.then if s.cond.const else s.other
            if taken is not None:
                with self.ctx.em.block(""):
                    self.stmt(taken, Env(env))
            return
        with self.ctx.em.block(f"if ({self.value(s.cond, env)})"):
            self.stmt(s.then, Env(env))
        if s.other is not None:
            with self.ctx.em.block("else"):
                self.stmt(s.other, Env(env))

    def _g_CallStmt(self, s: A.CallStmt, env: Env) -> None:
        c = s.call
        if c.kind == "header_method":
            self.header_method(c, env)
        elif c.kind in ("extern_method", "extern_func"):
            handler = self.ctx.externs.get(extern_key(c))
            if handler is None:
                raise UnsupportedConstruct(c.pos, f"{extern_key(c)} in C")
            handler(c, env)
        else:
            raise UnsupportedConstruct(c.pos, f"a call of kind {c.kind} in C")

    def header_method(self, c: A.Call, env: Env) -> None:
        f = c.func
        assert isinstance(f, A.Member)  # `h.setValid()`
        h = self.lvalue(f.expr, env)
        t = f.expr.type
        em = self.ctx.em
        if f.name == "setValid":  # an invalid header becomes valid with zero fields
            self.invalidate_siblings(f.expr, env)
            with em.block(f"if (!{dot(h, 'valid_')})"):
                em.line(f"memset(&{h}, 0, sizeof {h});")
                em.line(f"{dot(h, 'valid_')} = 1;")
        elif f.name == "setInvalid":
            if isinstance(t, StructType) and t.kind == "header_union":
                for n, _ in t.fields:
                    em.line(f"{member(h, n)}.valid_ = 0;")
            else:
                em.line(f"{dot(h, 'valid_')} = 0;")
        else:
            raise UnsupportedConstruct(c.pos, f"{f.name}() as a statement in C")

    def invalidate_siblings(self, e: A.Expr, env: Env) -> None:
        """A header union holds at most one valid member: the others of `e`'s union become
        invalid."""
        if not union_member(e):
            return
        assert isinstance(e, A.Member)
        base = self.ctx.expr.ex(e.expr, env)
        for n, _ in e.expr.type.fields:
            if n != e.name:
                self.ctx.em.line(f"{member(base, n)}.valid_ = 0;")


def union_member(e: A.Expr) -> bool:
    return isinstance(e, A.Member) and isinstance(e.expr.type, StructType) and \
        e.expr.type.kind == "header_union"
