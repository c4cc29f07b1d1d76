"""Statements (a generator over the shared `GenContext`): assignments, if, switch, exit, return, and
the hoisting that keeps P4's evaluation order when expressions have side effects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..frontend import ast as A
from ..frontend.diagnostics import UnsupportedConstruct
from ..frontend.types import ActionRunType, StructType
from .env import Env
from .structs import is_aggregate, zero_value

if TYPE_CHECKING:
    from .context import GenContext


class StmtGen:
    """Statements."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    def block(self, stmts: list[A.Stmt], env: Env) -> None:
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s: A.Stmt, env: Env) -> None:
        before = set(self.ctx.pre)
        getattr(self, "_g_" + type(s).__name__)(s, env)
        for key in set(self.ctx.pre) - before:
            del self.ctx.pre[key]

    def _g_Empty(self, s, env) -> None:
        pass

    def _g_ConstDecl(self, s, env) -> None:
        pass

    def _g_Block(self, s: A.Block, env: Env) -> None:
        self.block(s.stmts, Env(env))

    def _g_VarDecl(self, s: A.VarDecl, env: Env) -> None:
        name = self.ctx.em.fresh(s.name)
        env.bind(s.sym, name)
        t = s.sym.type
        if s.init is None:
            self.ctx.em.line(f"{name} = {zero_value(t)}")
            return
        self.hoist(s.init, env)
        value = self.ctx.expr.ex(s.init, env)
        if is_aggregate(t) and not isinstance(s.init, (A.ListExpr, A.StructInit)):
            value += "._copy()"
        self.ctx.em.line(f"{name} = {value}")

    def _g_Assign(self, s: A.Assign, env: Env) -> None:
        if has_side_effects(s.rhs) or getattr(s, "compound", False):
            self.pin_lvalue(s.lhs, env)
        self.hoist(s.rhs, env)
        self.assign(s.lhs, self.ctx.expr.ex(s.rhs, env), env)

    def pin_lvalue(self, e: A.Expr, env: Env) -> None:
        """Evaluate the run-time indexes of an lvalue now (P4 evaluates left to right)."""
        while isinstance(e, (A.Member, A.Index, A.Slice)):
            if isinstance(e, A.Index) and e.index.const is None:
                self.pin(e.index, env)
            e = e.expr

    def pin(self, e: A.Expr, env: Env) -> None:
        if e.const is not None or id(e) in self.ctx.pre:
            return
        self.hoist(e, env)
        v = self.ctx.em.fresh("v")
        self.ctx.em.line(f"{v} = {self.ctx.expr.ex(e, env)}")
        self.ctx.pre[id(e)] = v

    def assign(self, lhs: A.Expr, value: str, env: Env) -> None:
        t = lhs.type
        if isinstance(lhs, A.Slice):
            hi, lo = lhs.hi.const, lhs.lo.const
            m = (1 << (hi - lo + 1)) - 1
            base = self.ctx.expr.ex(lhs.expr, env)
            bt = lhs.expr.type
            new = f"(({base} & {hex(~(m << lo) & bt.mask)}) | (({value} & {hex(m)}) << {lo}))"
            if bt.signed:
                new = f"_signed({new[1:-1].replace(base, f'({base} & {hex(bt.mask)})', 1)}, " \
                      f"{bt.width})"
            self.assign(lhs.expr, new, env)
            return
        saved = self.ctx.pre.pop(id(lhs), None)  # the target itself, never its pinned value
        target = self.ctx.expr.ex(lhs, env)
        if saved is not None:
            self.ctx.pre[id(lhs)] = saved
        if is_aggregate(t):
            self.ctx.em.line(f"{target}._assign({value})")
            if union_member(lhs):
                self.ctx.em.line(f"if {target}._valid:")
                with self.ctx.em.indent():
                    self.ctx.call.invalidate_union_siblings(lhs, env)
        else:
            self.ctx.em.line(f"{target} = {value}")

    def _g_If(self, s: A.If, env: Env) -> None:
        if isinstance(s.cond.const, bool):  # a constant condition: only the branch taken
            taken = s.then if s.cond.const else s.other
            if taken is not None:
                self.ctx.em.line("if True:")
                with self.ctx.em.indent():
                    self.stmt(taken, Env(env))
            return
        self.hoist(s.cond, env)
        self.ctx.em.line(f"if {self.ctx.expr.ex(s.cond, env)}:")
        with self.ctx.em.indent():
            self.stmt(s.then, Env(env))
        if s.other is not None:
            self.ctx.em.line("else:")
            with self.ctx.em.indent():
                self.stmt(s.other, Env(env))

    def _g_For(self, s: A.For, env: Env) -> None:
        inner = Env(env)
        for init in s.init:
            self.stmt(init, inner)
        self.ctx.em.line("while True:")
        with self.ctx.em.indent():
            if s.cond is not None:
                self.hoist(s.cond, inner)
                self.ctx.em.line(f"if not {self.ctx.expr.ex(s.cond, inner)}:")
                with self.ctx.em.indent():
                    self.ctx.em.line("break")
            env.frame.loops.append((s.update, inner))
            try:
                self.stmt(s.body, Env(inner))
            finally:
                env.frame.loops.pop()
            self.block(s.update, inner)

    def _g_Break(self, s: A.Break, env: Env) -> None:
        self.ctx.em.line("break")

    def _g_Continue(self, s: A.Continue, env: Env) -> None:
        update, inner = env.frame.loops[-1]
        self.block(update, inner)  # a P4 continue still runs the loop's update
        self.ctx.em.line("continue")

    def _g_Exit(self, s: A.Exit, env: Env) -> None:
        for frame in env.frames():
            for line in frame.copyouts:
                self.ctx.em.line(line)
        self.ctx.em.line("return")

    def _g_Return(self, s: A.Return, env: Env) -> None:
        frame = env.frame
        if frame.loops and frame.ret == "break":
            raise UnsupportedConstruct(s.pos, "return inside a for loop of an inlined action or control")
        if s.expr is not None:
            self.hoist(s.expr, env)
            value = self.ctx.expr.ex(s.expr, env)
            if is_aggregate(s.expr.type):
                value += "._copy()"
            if frame.ret == "return":
                self.ctx.em.line(f"return {value}")
                return
            self.ctx.em.line(f"{frame.ret_var} = {value}")
        self.ctx.em.line("return" if frame.ret == "return" else "break")

    def _g_Switch(self, s: A.Switch, env: Env) -> None:
        self.hoist(s.expr, env)
        if isinstance(s.expr.type, ActionRunType):
            subject = self.ctx.expr.ex(s.expr, env)
            labels = [None if c.label is None else
                      repr(self.ctx.call.action_name(c.label.ref)) for c in s.cases]
        else:
            subject = self.ctx.em.fresh("sw")
            self.ctx.em.line(f"{subject} = {self.ctx.expr.ex(s.expr, env)}")
            labels = [None if c.label is None else self.ctx.expr.ex(c.label, env) for c in s.cases]
        pending: list[str] = []
        first = True
        for c, label in zip(s.cases, labels, strict=False):
            if label is not None:
                pending.append(label)
            if c.body is None and label is not None:
                continue
            if label is None:
                self.ctx.em.line("else:" if not first else "if True:")
            else:
                cond = " or ".join(f"{subject} == {x}" for x in pending)
                self.ctx.em.line(f"{'if' if first else 'elif'} {cond}:")
            pending = []
            first = False
            with self.ctx.em.indent():
                if c.body is not None:
                    self.stmt(c.body, Env(env))

    def _g_CallStmt(self, s: A.CallStmt, env: Env) -> None:
        self.ctx.call.call_stmt(s.call, env)

    # ---- hoisting table applies out of expressions --------------------------------------
    def hoist(self, e: A.Expr, env: Env) -> None:
        """Emit, ahead of the statement using e, the parts of e with side effects (table
        applies, calls with out arguments), in P4's left-to-right order. A short-circuit or
        ?: operand with side effects becomes an if statement, so it runs only when P4 says."""
        if e is None or e.const is not None or id(e) in self.ctx.pre:
            return
        if isinstance(e, A.Call):
            if e.kind == "table_apply":
                assert isinstance(e.func, A.Member)  # `t.apply()`
                e.hoisted = self.ctx.table.table_apply(e.func.expr.ref.decl, env)
                return
            if e.kind == "function" and any(p.direction in ("out", "inout")
                                            for p in e.func.ref.decl.proto.params):
                self.ctx.call.hoist_args(e, env)
                e.hoisted = self.ctx.call.function_call(e, env)
                return
            args = [a.expr for a in e.args if a.expr is not None]
            self.pin_before_effects(args, env)
            for a in args:
                self.hoist(a, env)
            return
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            self.hoist(e.left, env)
            if has_side_effects(e.right):
                r = self.ctx.em.fresh("c")
                self.ctx.em.line(f"{r} = {self.ctx.expr.ex(e.left, env)}")
                self.ctx.em.line(f"if {'' if e.op == '&&' else 'not '}{r}:")
                with self.ctx.em.indent():
                    self.hoist(e.right, env)
                    self.ctx.em.line(f"{r} = {self.ctx.expr.ex(e.right, env)}")
                self.ctx.pre[id(e)] = r
            return
        if isinstance(e, A.Cond):
            self.hoist(e.cond, env)
            if has_side_effects(e.then) or has_side_effects(e.other):
                r = self.ctx.em.fresh("c")
                copy = "._copy()" if is_aggregate(e.type) else ""
                self.ctx.em.line(f"if {self.ctx.expr.ex(e.cond, env)}:")
                for i, branch in enumerate((e.then, e.other)):
                    if i:
                        self.ctx.em.line("else:")
                    with self.ctx.em.indent():
                        self.hoist(branch, env)
                        self.ctx.em.line(f"{r} = {self.ctx.expr.ex(branch, env)}{copy}")
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
            if not has_side_effects(x) and not is_aggregate(x.type):
                self.pin(x, env)


def union_member(e: A.Expr) -> bool:
    return isinstance(e, A.Member) and isinstance(e.expr.type, StructType) and \
        e.expr.type.kind == "header_union"


def has_side_effects(e: A.Expr | None) -> bool:
    if e is None or e.const is not None:
        return False
    if isinstance(e, A.Call):
        if e.kind == "table_apply":
            return True
        if e.kind == "function" and any(p.direction in ("out", "inout")
                                        for p in e.func.ref.decl.proto.params):
            return True
        return any(has_side_effects(a.expr) for a in e.args)
    return any(has_side_effects(c) for c in _children(e))


def _children(e: A.Expr):
    for name in ("expr", "left", "right", "index", "cond", "then", "other", "value", "mask",
                 "lo", "hi"):
        v = getattr(e, name, None)
        if isinstance(v, A.Expr):
            yield v
    for v in getattr(e, "items", []) or []:
        yield v
    for _, v in getattr(e, "fields", []) or []:
        if isinstance(v, A.Expr):
            yield v

