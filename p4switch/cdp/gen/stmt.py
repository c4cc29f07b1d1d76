"""Statements -> C (as backend/stmt.py for the Python back end): declarations, assignments
(scalars, slices, whole headers and structs), if, switch, blocks, exit and return, header
validity, the calls the current stage's `externs` generate, and in controls the actions,
tables and sub-controls they call (controls.py). Anything else is UnsupportedConstruct.

A table applied inside an expression (`if (t.apply().hit)`) runs ahead of the statement, in
P4's left-to-right order, as the Python back end hoists it (`hoist`).

In a parser, a stack access out of range (`last` on an empty stack) stops the parser with
StackOutOfBounds before the statement has any effect, as the Python pipeline raises it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch.backend.env import Env
from p4switch.backend.stmt import _children, has_side_effects
from p4switch.frontend import ast as A
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.types import ActionRunType, Bits, StackType, StructType, Varbit

from .expr import dot, extern_key, mask, member
from .types import nbytes, scalar_ctype, wide

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
        before = set(self.ctx.pre)
        handler(s, env)
        for key in set(self.ctx.pre) - before:  # what was hoisted is this statement's
            del self.ctx.pre[key]

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
            self.hoist(s.init, env)
            self.assign(s.pos, name, t, s.init, env)
        elif aggregate:  # each run of the declaration starts from zero (invalid headers)
            self.ctx.em.line(f"memset(&{name}, 0, sizeof {name});")
        else:
            self.ctx.em.line(f"{name} = 0;")

    def _g_Assign(self, s: A.Assign, env: Env) -> None:
        self.hoist(s.rhs, env)  # an lvalue has no run-time index to pin first: C refuses those
        lhs = s.lhs
        if not isinstance(lhs, A.Slice):
            self.assign(s.pos, lhs, lhs.type, s.rhs, env)
            return
        self.store(lhs, self.value(s.rhs, env), env)

    def store(self, lhs: A.Expr, value: str, env: Env) -> None:
        """lhs (a scalar, a slice of one, or an aggregate) = the C value `value`."""
        if not isinstance(lhs, A.Slice):
            t = lhs.type
            if wide(t) or isinstance(t, Varbit):
                raise UnsupportedConstruct(lhs.pos, f"assigning a {t} in C")
            target = self.lvalue(lhs, env)
            ctype = scalar_ctype(t)
            self.ctx.em.line(f"{target} = {f'({ctype})' if ctype else ''}{value};")
            if union_member(lhs):
                with self.ctx.em.block(f"if ({target}.valid_)"):
                    self.invalidate_siblings(lhs, env)
            return
        bt = lhs.expr.type
        if not isinstance(bt, Bits) or wide(bt):
            raise UnsupportedConstruct(lhs.pos, f"assigning a slice of {bt} in C")
        current = self.value(lhs.expr, env)  # a slice of a slice: the outer one's bits
        hi, lo = lhs.hi.const, lhs.lo.const
        m = (1 << (hi - lo + 1)) - 1
        keep = f"UINT64_C({hex(~(m << lo) & bt.mask)})"
        part = f"((uint64_t){value} & {mask(hi - lo + 1)})"
        new = f"(((uint64_t){current} & {keep}) | {f'({part} << {lo})' if lo else part})"
        self.store(lhs.expr, f"p4_sext({new}, {bt.width})" if bt.signed else new, env)

    def assign(self, pos, lhs: A.Expr | str, t, rhs: A.Expr, env: Env) -> None:
        """lhs (an lvalue, or a C variable) = rhs, the right side evaluated first: a scalar,
        or a whole header, struct or stack copied (a union member made valid invalidates its
        siblings)."""
        if wide(t):
            self.assign_wide(pos, lhs, t, rhs, env)
            return
        if isinstance(t, Varbit):
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

    def assign_wide(self, pos, lhs: A.Expr | str, t, rhs: A.Expr, env: Env) -> None:
        """A bit<W> wider than 64 bits (a byte array) = a constant, or another such field."""
        target = lhs if isinstance(lhs, str) else self.lvalue(lhs, env)
        n = nbytes(t.width)
        if isinstance(rhs.const, int) and not isinstance(rhs.const, bool):
            data = (rhs.const & t.mask).to_bytes(n, "big")
            if not any(data):
                self.ctx.em.line(f"memset({target}, 0, {n});")
                return
            const = self.ctx.em.fresh("wide")
            self.ctx.em.decls.append(f"static const uint8_t {const}[{n}] = "
                                     f"{{{', '.join(str(b) for b in data)}}};")
            self.ctx.em.line(f"memcpy({target}, {const}, {n});")
            return
        if isinstance(rhs, (A.Member, A.Name)) and rhs.type == t:
            self.ctx.em.line(f"memmove({target}, {self.lvalue(rhs, env)}, {n});")
            return
        raise UnsupportedConstruct(pos, f"assigning a computed {t} in C")

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
        self.hoist(s.cond, env)
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
            if self.ctx.controls is not None:
                self.ctx.controls.hoist_args(c, env)
            handler(c, env)
        elif self.ctx.controls is not None:
            self.ctx.controls.call_stmt(c, env)
        else:
            raise UnsupportedConstruct(c.pos, f"a call of kind {c.kind} in C")

    # ---- leaving and choosing ----------------------------------------------------------------
    def _g_Exit(self, s: A.Exit, env: Env) -> None:
        for frame in env.frames():
            for line in frame.copyouts:
                self.ctx.em.line(line)
        self.ctx.em.line("return;")

    def _g_Return(self, s: A.Return, env: Env) -> None:
        if s.expr is not None or not env.frame.ret:
            raise UnsupportedConstruct(s.pos, "return with a value (functions) in C")
        self.ctx.em.line(env.frame.ret)

    def _g_Switch(self, s: A.Switch, env: Env) -> None:
        em = self.ctx.em
        self.hoist(s.expr, env)
        controls = self.ctx.controls
        if isinstance(s.expr.type, ActionRunType):
            assert controls is not None  # action_run exists in controls only
            subject = self.value(s.expr, env)
            labels = [None if c.label is None else
                      str(controls.layout.action(controls.action_name(c.label.ref)))
                      for c in s.cases]
        else:
            ctype = scalar_ctype(s.expr.type)
            if ctype is None:
                raise UnsupportedConstruct(s.pos, f"switch on {s.expr.type} in C")
            subject = em.declare(ctype, "sw")
            em.line(f"{subject} = {self.value(s.expr, env)};")
            labels = [None if c.label is None else self.value(c.label, env) for c in s.cases]
        with em.block(f"switch ({subject})"):
            for c, label in zip(s.cases, labels, strict=True):
                em.line("default:" if label is None else f"case {label}:")
                if c.body is not None:
                    with em.block(""):
                        self.stmt(c.body, Env(env))
                    em.line("    break;")

    # ---- hoisting table applies out of expressions ---------------------------------------
    def hoist(self, e: A.Expr | None, env: Env) -> None:
        """Emit, ahead of the statement using e, the table applies in e in P4's left-to-right
        order (backend/stmt.py's `hoist`): operands before one are computed first, a
        short-circuit or ?: operand runs only when P4 says."""
        if e is None or e.const is not None or id(e) in self.ctx.pre or \
                not has_side_effects(e):
            return
        em = self.ctx.em
        if isinstance(e, A.Call):
            if e.kind == "table_apply":
                assert isinstance(e.func, A.Member) and self.ctx.controls is not None
                self.ctx.applied[id(e)] = self.ctx.controls.table_apply(e.func.expr.ref.decl,
                                                                        env)
                return
            if e.kind == "function":
                raise UnsupportedConstruct(e.pos, "functions with out parameters in C")
            args = [a.expr for a in e.args if a.expr is not None]
            self.pin_before_effects(args, env)
            for a in args:
                self.hoist(a, env)
            return
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            self.hoist(e.left, env)
            if has_side_effects(e.right):
                r = em.declare("int", "c")
                em.line(f"{r} = {self.value(e.left, env)};")
                with em.block(f"if ({'' if e.op == '&&' else '!'}{r})"):
                    self.hoist(e.right, env)
                    em.line(f"{r} = {self.value(e.right, env)};")
                self.ctx.pre[id(e)] = r
            return
        if isinstance(e, A.Cond):
            self.hoist(e.cond, env)
            if has_side_effects(e.then) or has_side_effects(e.other):
                ctype = scalar_ctype(e.type)
                if ctype is None:
                    raise UnsupportedConstruct(e.pos, f"?: on {e.type} with a table apply in C")
                r = em.declare(ctype, "c")
                with em.block(f"if ({self.value(e.cond, env)})"):
                    self.hoist(e.then, env)
                    em.line(f"{r} = {self.value(e.then, env)};")
                with em.block("else"):
                    self.hoist(e.other, env)
                    em.line(f"{r} = {self.value(e.other, env)};")
                self.ctx.pre[id(e)] = r
            return
        kids = list(_children(e))
        self.pin_before_effects(kids, env)
        for child in kids:
            self.hoist(child, env)

    def pin_before_effects(self, operands: list[A.Expr], env: Env) -> None:
        """Operands evaluated before one with side effects are computed into temps first."""
        last = max((i for i, x in enumerate(operands) if has_side_effects(x)), default=0)
        for x in operands[:last]:
            if not has_side_effects(x):
                self.pin(x, env)

    def pin(self, e: A.Expr, env: Env) -> None:
        if e.const is not None or id(e) in self.ctx.pre:
            return
        ctype = scalar_ctype(e.type)
        if ctype is None:
            raise UnsupportedConstruct(e.pos, f"a {e.type} operand before a table apply in C")
        self.hoist(e, env)
        v = self.ctx.em.declare(ctype, "v")
        self.ctx.em.line(f"{v} = {self.value(e, env)};")
        self.ctx.pre[id(e)] = v

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
