"""Calls and inlining (a generator over the shared `GenContext`).

Actions and sub-controls are inlined at their call sites (p4c does the same), so every
variable of a pipeline stage is a Python local. An inlined body that contains `return` runs
inside `while True: ... break`. Arguments follow P4's copy-in/copy-out rules; a sub-control's
header/struct arguments are passed by reference when no two of them overlap (a sub-control
sees nothing but its parameters, so that is indistinguishable from copying).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..frontend import ast as A
from ..frontend import ast_decl as D
from ..frontend.diagnostics import UnsupportedConstruct
from ..frontend.symbols import ActionSym, FunctionSym, InstanceSym, VarSym
from ..frontend.types import BlockType, StackType, StructType
from .emitter import py_ident
from .env import Env, Frame
from .stmt import union_member
from .structs import is_aggregate, zero_value

if TYPE_CHECKING:
    from .context import GenContext


class CallGen:
    """Calls and inlining."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    def call_stmt(self, c: A.Call, env: Env) -> None:
        kind = c.kind
        if kind == "action":
            if not self.ctx.action_depth:  # p4c inlines actions called from actions away
                self.ctx.model.action(c.func.ref.decl, self.action_name(c.func.ref),
                                  env.instance.position(c.func.ref.decl), in_table=False)
            self.inline_action(c.func.ref, c.bound, env)
        elif kind == "function":
            self.hoist_args(c, env)
            result = self.function_call(c, env)
            if result:
                self.ctx.em.line(result)
        elif kind in ("extern_func", "extern_method"):
            self.hoist_args(c, env)
            self.ctx.extern.extern_call(c, env, statement=True)
        elif kind == "header_method":
            method = _method(c)
            h = self.ctx.expr.ex(method.expr, env)
            name = method.name
            if name == "setValid":
                self.invalidate_union_siblings(method.expr, env)
                self.ctx.em.line(f"if not {h}._valid:")
                with self.ctx.em.indent():
                    self.ctx.em.line(f"{h}._zero()")
                    self.ctx.em.line(f"{h}._valid = True")
            elif name == "setInvalid":
                self.ctx.em.line(f"{h}._valid = False")
        elif kind == "stack_method":
            method, count = _method(c), c.args[0].expr
            assert count is not None  # push_front/pop_front take a count
            st = self.ctx.expr.ex(method.expr, env)
            self.ctx.em.line(f"{st}.{method.name}({count.const})")
        elif kind == "table_apply":
            self.ctx.table.table_apply(_method(c).expr.ref.decl, env)
        elif kind == "control_apply":
            self.hoist_args(c, env)
            self.inline_control(c, env)
        elif kind == "parser_apply":
            self.hoist_args(c, env)
            self.ctx.parser.inline_subparser(c, env)
        else:
            raise UnsupportedConstruct(c.pos, f"call of kind {kind or type(c.func).__name__}")

    def hoist_args(self, c: A.Call, env: Env) -> None:
        for _, a in getattr(c, "bound", []):
            if a is not None:
                self.ctx.stmt.hoist(a, env)

    def call_expr(self, c: A.Call, env: Env) -> str:
        hoisted = getattr(c, "hoisted", None)
        if c.kind == "header_method" and _method(c).name == "isValid":
            return f"{self.ctx.expr.ex(_method(c).expr, env)}._valid"
        if c.kind == "function":
            return hoisted if hoisted else self.function_call(c, env)
        if c.kind in ("extern_func", "extern_method"):
            return self.ctx.extern.extern_call(c, env, statement=False)
        raise UnsupportedConstruct(c.pos, f"call of kind {c.kind} in an expression")

    def bind_params(self, bound, env: Env, inner: Env, by_ref_ok: bool) -> list[str]:
        """Copy-in: bind parameters in `inner`; returns the copy-out lines."""
        copyouts: list[str] = []
        refs = [a for p, a in bound if a is not None and p.direction in ("inout", "out")]
        for p, a in bound:
            sym = inner_sym(p)
            t = sym.type if sym else None
            if a is None:  # '_' or an absent optional argument
                name = self.ctx.em.fresh(p.name)
                self.ctx.em.line(f"{name} = {zero_value(t)}")
                inner.bind(sym, name)
                continue
            value = self.ctx.expr.ex(a, env)
            agg = is_aggregate(t) or isinstance(a.type, (StructType, StackType))
            if agg and p.direction in ("", "in") and by_ref_ok and _simple_path(a) and \
                    not _overlaps(a, refs):
                inner.bind(sym, value)
                continue
            if agg and by_ref_ok and p.direction == "inout" and _simple_path(a) and \
                    not _overlaps(a, refs):
                inner.bind(sym, value)
                continue
            name = self.ctx.em.fresh(p.name)
            if p.direction == "out":
                self.ctx.em.line(f"{name} = {zero_value(a.type)}")
            elif agg:
                self.ctx.em.line(f"{name} = {value}._copy()")
            else:
                self.ctx.em.line(f"{name} = {value}")
            inner.bind(sym, name)
            if p.direction in ("out", "inout"):
                copyouts.extend(self.capture(lambda a=a, name=name: self.ctx.stmt.assign(a, name, env)))
        return copyouts

    def invalidate_union_siblings(self, member: A.Expr, env: Env) -> None:
        """A header union holds at most one valid member."""
        if not union_member(member):
            return
        assert isinstance(member, A.Member)  # union_member() says it is one
        base = self.ctx.expr.ex(member.expr, env)
        for name, _ in member.expr.type.fields:
            if name != member.name:
                self.ctx.em.line(f"{base}.{py_ident(name)}._valid = False")

    def capture(self, fn) -> list[str]:
        """The lines fn emits, unindented, instead of emitting them."""
        em = self.ctx.em
        saved = em.lines, em.level
        em.lines, em.level = [], 0
        try:
            fn()
            return em.lines
        finally:
            em.lines, em.level = saved

    def run_inlined(self, stmts: list[A.Stmt], inner: Env, copyouts: list[str],
                    ret_var: str | None = None) -> None:
        if _has_return(stmts):
            self.ctx.em.line("while True:")
            with self.ctx.em.indent():
                self.ctx.stmt.block(stmts, inner)
                self.ctx.em.line("break")
        else:
            self.ctx.stmt.block(stmts, inner)
        for line in copyouts:
            self.ctx.em.line(line)

    def inline_action(self, sym: ActionSym, bound, env: Env, data_args=None) -> None:
        """Inline an action; `data_args` (a tuple expression) feeds the action-data params
        when the action runs from a table."""
        frame = Frame(ret="break")
        inner = Env(env, frame)
        params = sym.decl.params
        if data_args is not None:
            data = [p for p in params if not p.direction]
            names = [self.ctx.em.fresh(p.name) for p in data]
            if names:
                self.ctx.em.line(f"{''.join(n + ', ' for n in names)}= {data_args}")
            for p, n in zip(data, names, strict=False):
                inner.bind(inner_sym(p), n)
            bound = [(p, a) for p, a in bound] if bound else []
        copyouts = self.bind_params(bound or [], env, inner, by_ref_ok=False)
        frame.copyouts = copyouts
        self.ctx.action_depth += 1
        try:
            self.run_inlined(sym.decl.body.stmts, inner, copyouts)
        finally:
            self.ctx.action_depth -= 1

    def function_call(self, c: A.Call, env: Env) -> str:
        """Call a generated P4 function. Returns the value expression (no out params), or
        emits the call and copy-outs and returns the result variable."""
        fsym: FunctionSym = c.func.ref
        fname = self.ctx.program.function_name(fsym.decl)
        args, outs = [], []
        for p, a in c.bound:
            if p.direction in ("out", "inout"):
                outs.append((p, a))
                if p.direction == "out" or a is None:
                    sym = inner_sym(p)
                    assert sym is not None  # the checker declared the function's parameters
                    args.append(zero_value(sym.type))
                else:
                    v = self.ctx.expr.ex(a, env)
                    args.append(v + "._copy()" if is_aggregate(a.type) else v)
            else:
                args.append(self.ctx.expr.ex(a, env) if a is not None else "None")
        call = f"{fname}(ctx, _sm, {', '.join(args)})"
        if not outs:
            return call
        res = self.ctx.em.fresh("r")
        self.ctx.em.line(f"{res} = {call}")
        for i, (_, a) in enumerate(outs):
            if a is not None:
                val = f"{res}[{i + 1}]"
                self.ctx.stmt.assign(a, val, env)
        return f"{res}[0]"

    def inline_control(self, c: A.Call, env: Env) -> None:
        isym = _method(c).expr.ref
        if not isinstance(isym, InstanceSym) or not isinstance(isym.type, BlockType) \
                or not isinstance(isym.type.decl, D.ControlDecl):
            raise UnsupportedConstruct(c.pos, "applying a control passed as a constructor argument")
        decl = isym.type.decl
        assert decl.body is not None  # the parser gives a control its apply block
        inst = self.ctx.program.sub_instance(isym, env)
        frame = Frame(ret="break")
        inner = Env(env, frame, inst)
        copyouts = self.bind_params(c.bound, env, inner, by_ref_ok=True)
        frame.copyouts = copyouts
        self.ctx.program.instance_setup(inst, inner)
        self.run_inlined(decl.body.stmts, inner, copyouts)

    def action_name(self, sym) -> str:
        return self.ctx.program.fq_name(sym.decl, sym.owner)


def inner_sym(p: D.Param) -> VarSym | None:
    return getattr(p, "sym", None)


def _simple_path(e: A.Expr) -> bool:
    if isinstance(e, A.Name):
        return True
    if isinstance(e, A.Member):
        return not isinstance(e.ref, tuple) and _simple_path(e.expr)
    if isinstance(e, A.Index):
        return e.index.const is not None and _simple_path(e.expr)
    return False


def _path(e: A.Expr) -> tuple:
    if isinstance(e, A.Name):
        return (id(e.ref),)
    if isinstance(e, A.Member):
        return (*_path(e.expr), e.name)
    if isinstance(e, (A.Index, A.Slice)):
        return (*_path(e.expr), "[]")
    return (id(e),)


def _overlaps(a: A.Expr, refs: list[A.Expr]) -> bool:
    pa = _path(a)
    for b in refs:
        if b is a:
            continue
        pb = _path(b)
        n = min(len(pa), len(pb))
        if pa[:n] == pb[:n]:
            return True
    return False


def _has_return(stmts) -> bool:
    for s in stmts:
        if isinstance(s, A.Return):
            return True
        if isinstance(s, A.Block) and _has_return(s.stmts):
            return True
        if isinstance(s, A.If) and (_has_return([s.then]) or
                                    (s.other is not None and _has_return([s.other]))):
            return True
        if isinstance(s, A.Switch) and any(c.body and _has_return([c.body]) for c in s.cases):
            return True
    return False


def _method(c: A.Call) -> A.Member:
    """The `x.method` a method call (header, stack, table, control, parser, extern) calls."""
    assert isinstance(c.func, A.Member)
    return c.func
