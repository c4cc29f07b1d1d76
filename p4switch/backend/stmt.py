"""Statements, calls and inlining (a mixin of the code generator).

Actions and sub-controls are inlined at their call sites (p4c does the same), so every
variable of a pipeline stage is a Python local. An inlined body that contains `return` runs
inside `while True: ... break`. Arguments follow P4's copy-in/copy-out rules; a sub-control's
header/struct arguments are passed by reference when no two of them overlap (a sub-control
sees nothing but its parameters, so that is indistinguishable from copying).
"""

from __future__ import annotations

from ..frontend import ast as A
from ..frontend.symbols import ActionSym, FunctionSym, InstanceSym, TableSym, VarSym
from ..frontend.types import ActionRunType, ApplyResultType, BoolType, StackType, StructType
from .emitter import py_ident
from .env import Env, Frame, Instance
from .expr import Unsupported
from .structs import is_aggregate, zero_value


class StmtGen:
    def block(self, stmts: list[A.Stmt], env: Env) -> None:
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s: A.Stmt, env: Env) -> None:
        before = set(self.pre)
        getattr(self, "_g_" + type(s).__name__)(s, env)
        for key in set(self.pre) - before:
            del self.pre[key]

    def _g_Empty(self, s, env) -> None:
        pass

    def _g_ConstDecl(self, s, env) -> None:
        pass

    def _g_Block(self, s: A.Block, env: Env) -> None:
        self.block(s.stmts, Env(env))

    def _g_VarDecl(self, s: A.VarDecl, env: Env) -> None:
        name = self.em.fresh(s.name)
        env.bind(s.sym, name)
        t = s.sym.type
        if s.init is None:
            self.em.line(f"{name} = {zero_value(t)}")
            return
        self.hoist(s.init, env)
        value = self.ex(s.init, env)
        if is_aggregate(t) and not isinstance(s.init, (A.ListExpr, A.StructInit)):
            value += "._copy()"
        self.em.line(f"{name} = {value}")

    def _g_Assign(self, s: A.Assign, env: Env) -> None:
        if has_side_effects(s.rhs) or getattr(s, "compound", False):
            self.pin_lvalue(s.lhs, env)
        self.hoist(s.rhs, env)
        self.assign(s.lhs, self.ex(s.rhs, env), env)

    def pin_lvalue(self, e: A.Expr, env: Env) -> None:
        """Evaluate the run-time indexes of an lvalue now (P4 evaluates left to right)."""
        while isinstance(e, (A.Member, A.Index, A.Slice)):
            if isinstance(e, A.Index) and e.index.const is None:
                self.pin(e.index, env)
            e = e.expr

    def pin(self, e: A.Expr, env: Env) -> None:
        if e.const is not None or id(e) in self.pre:
            return
        self.hoist(e, env)
        v = self.em.fresh("v")
        self.em.line(f"{v} = {self.ex(e, env)}")
        self.pre[id(e)] = v

    def assign(self, lhs: A.Expr, value: str, env: Env) -> None:
        t = lhs.type
        if isinstance(lhs, A.Slice):
            hi, lo = lhs.hi.const, lhs.lo.const
            m = (1 << (hi - lo + 1)) - 1
            base = self.ex(lhs.expr, env)
            bt = lhs.expr.type
            new = f"(({base} & {hex(~(m << lo) & bt.mask)}) | (({value} & {hex(m)}) << {lo}))"
            if bt.signed:
                new = f"_signed({new[1:-1].replace(base, f'({base} & {hex(bt.mask)})', 1)}, " \
                      f"{bt.width})"
            self.assign(lhs.expr, new, env)
            return
        saved = self.pre.pop(id(lhs), None)  # the target itself, never its pinned value
        target = self.ex(lhs, env)
        if saved is not None:
            self.pre[id(lhs)] = saved
        if is_aggregate(t):
            self.em.line(f"{target}._assign({value})")
            if _union_member(lhs):
                self.em.line(f"if {target}._valid:")
                with self.em.indent():
                    self.invalidate_union_siblings(lhs, env)
        else:
            self.em.line(f"{target} = {value}")

    def _g_If(self, s: A.If, env: Env) -> None:
        self.hoist(s.cond, env)
        self.em.line(f"if {self.ex(s.cond, env)}:")
        with self.em.indent():
            self.stmt(s.then, Env(env))
        if s.other is not None:
            self.em.line("else:")
            with self.em.indent():
                self.stmt(s.other, Env(env))

    def _g_Exit(self, s: A.Exit, env: Env) -> None:
        for frame in env.frames():
            for line in frame.copyouts:
                self.em.line(line)
        self.em.line("return")

    def _g_Return(self, s: A.Return, env: Env) -> None:
        frame = env.frame
        frame.used_return = True
        if s.expr is not None:
            self.hoist(s.expr, env)
            value = self.ex(s.expr, env)
            if is_aggregate(s.expr.type):
                value += "._copy()"
            if frame.ret == "return":
                self.em.line(f"return {value}")
                return
            self.em.line(f"{frame.ret_var} = {value}")
        self.em.line("return" if frame.ret == "return" else "break")

    def _g_Switch(self, s: A.Switch, env: Env) -> None:
        self.hoist(s.expr, env)
        if isinstance(s.expr.type, ActionRunType):
            subject = self.ex(s.expr, env)
            labels = [None if c.label is None else
                      repr(self.action_name(c.label.ref)) for c in s.cases]
        else:
            subject = self.em.fresh("sw")
            self.em.line(f"{subject} = {self.ex(s.expr, env)}")
            labels = [None if c.label is None else self.ex(c.label, env) for c in s.cases]
        pending: list[str] = []
        first = True
        for c, label in zip(s.cases, labels, strict=False):
            if label is not None:
                pending.append(label)
            if c.body is None and label is not None:
                continue
            if label is None:
                self.em.line("else:" if not first else "if True:")
            else:
                cond = " or ".join(f"{subject} == {x}" for x in pending)
                self.em.line(f"{'if' if first else 'elif'} {cond}:")
            pending = []
            first = False
            with self.em.indent():
                if c.body is not None:
                    self.stmt(c.body, Env(env))

    def _g_CallStmt(self, s: A.CallStmt, env: Env) -> None:
        self.call_stmt(s.call, env)

    # ---- hoisting table applies out of expressions --------------------------------------
    def hoist(self, e: A.Expr, env: Env) -> None:
        """Emit, ahead of the statement using e, the parts of e with side effects (table
        applies, calls with out arguments), in P4's left-to-right order. A short-circuit or
        ?: operand with side effects becomes an if statement, so it runs only when P4 says."""
        if e is None or e.const is not None or id(e) in self.pre:
            return
        if isinstance(e, A.Call):
            if e.kind == "table_apply":
                e.hoisted = self.table_apply(e.func.expr.ref.decl, env)
                return
            if e.kind == "function" and any(p.direction in ("out", "inout")
                                            for p in e.func.ref.decl.proto.params):
                self.hoist_args(e, env)
                e.hoisted = self.function_call(e, env)
                return
            args = [a.expr for a in e.args if a.expr is not None]
            self.pin_before_effects(args, env)
            for a in args:
                self.hoist(a, env)
            return
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            self.hoist(e.left, env)
            if has_side_effects(e.right):
                r = self.em.fresh("c")
                self.em.line(f"{r} = {self.ex(e.left, env)}")
                self.em.line(f"if {'' if e.op == '&&' else 'not '}{r}:")
                with self.em.indent():
                    self.hoist(e.right, env)
                    self.em.line(f"{r} = {self.ex(e.right, env)}")
                self.pre[id(e)] = r
            return
        if isinstance(e, A.Cond):
            self.hoist(e.cond, env)
            if has_side_effects(e.then) or has_side_effects(e.other):
                r = self.em.fresh("c")
                copy = "._copy()" if is_aggregate(e.type) else ""
                self.em.line(f"if {self.ex(e.cond, env)}:")
                for i, branch in enumerate((e.then, e.other)):
                    if i:
                        self.em.line("else:")
                    with self.em.indent():
                        self.hoist(branch, env)
                        self.em.line(f"{r} = {self.ex(branch, env)}{copy}")
                self.pre[id(e)] = r
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

    # ---- calls ---------------------------------------------------------------------------
    def call_stmt(self, c: A.Call, env: Env) -> None:
        kind = c.kind
        if kind == "action":
            self.inline_action(c.func.ref, c.bound, env)
        elif kind == "function":
            self.hoist_args(c, env)
            result = self.function_call(c, env)
            if result:
                self.em.line(result)
        elif kind in ("extern_func", "extern_method"):
            self.hoist_args(c, env)
            self.extern_call(c, env, statement=True)
        elif kind == "header_method":
            h = self.ex(c.func.expr, env)
            name = c.func.name
            if name == "setValid":
                self.invalidate_union_siblings(c.func.expr, env)
                self.em.line(f"if not {h}._valid:")
                with self.em.indent():
                    self.em.line(f"{h}._zero()")
                    self.em.line(f"{h}._valid = True")
            elif name == "setInvalid":
                self.em.line(f"{h}._valid = False")
        elif kind == "stack_method":
            st = self.ex(c.func.expr, env)
            self.em.line(f"{st}.{c.func.name}({c.args[0].expr.const})")
        elif kind == "table_apply":
            self.table_apply(c.func.expr.ref.decl, env)
        elif kind == "control_apply":
            self.hoist_args(c, env)
            self.inline_control(c, env)
        elif kind == "parser_apply":
            self.hoist_args(c, env)
            self.inline_subparser(c, env)
        else:
            raise Unsupported(c.pos, f"call of kind {kind or type(c.func).__name__}")

    def hoist_args(self, c: A.Call, env: Env) -> None:
        for _, a in getattr(c, "bound", []):
            if a is not None:
                self.hoist(a, env)

    def call_expr(self, c: A.Call, env: Env) -> str:
        hoisted = getattr(c, "hoisted", None)
        if c.kind == "header_method" and c.func.name == "isValid":
            return f"{self.ex(c.func.expr, env)}._valid"
        if c.kind == "function":
            return hoisted if hoisted else self.function_call(c, env)
        if c.kind in ("extern_func", "extern_method"):
            return self.extern_call(c, env, statement=False)
        raise Unsupported(c.pos, f"call of kind {c.kind} in an expression")

    def bind_params(self, bound, env: Env, inner: Env, by_ref_ok: bool) -> list[str]:
        """Copy-in: bind parameters in `inner`; returns the copy-out lines."""
        copyouts: list[str] = []
        refs = [a for p, a in bound if a is not None and p.direction in ("inout", "out")]
        for p, a in bound:
            sym = inner_sym(p)
            t = sym.type if sym else None
            if a is None:  # '_' or an absent optional argument
                name = self.em.fresh(p.name)
                self.em.line(f"{name} = {zero_value(t)}")
                inner.bind(sym, name)
                continue
            value = self.ex(a, env)
            agg = is_aggregate(t) or isinstance(a.type, (StructType, StackType))
            if agg and p.direction in ("", "in") and by_ref_ok and _simple_path(a):
                inner.bind(sym, value)
                continue
            if agg and by_ref_ok and p.direction == "inout" and _simple_path(a) and \
                    not _overlaps(a, refs):
                inner.bind(sym, value)
                continue
            name = self.em.fresh(p.name)
            if p.direction == "out":
                self.em.line(f"{name} = {zero_value(a.type)}")
            elif agg:
                self.em.line(f"{name} = {value}._copy()")
            else:
                self.em.line(f"{name} = {value}")
            inner.bind(sym, name)
            if p.direction in ("out", "inout"):
                copyouts.extend(self.capture(lambda a=a, name=name: self.assign(a, name, env)))
        return copyouts

    def invalidate_union_siblings(self, member: A.Expr, env: Env) -> None:
        """A header union holds at most one valid member."""
        if not _union_member(member):
            return
        base = self.ex(member.expr, env)
        for name, _ in member.expr.type.fields:
            if name != member.name:
                self.em.line(f"{base}.{py_ident(name)}._valid = False")

    def capture(self, fn) -> list[str]:
        """The lines fn emits, unindented, instead of emitting them."""
        em = self.em
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
            self.em.line("while True:")
            with self.em.indent():
                self.block(stmts, inner)
                self.em.line("break")
        else:
            self.block(stmts, inner)
        for line in copyouts:
            self.em.line(line)

    def inline_action(self, sym: ActionSym, bound, env: Env, data_args=None) -> None:
        """Inline an action; `data_args` (a tuple expression) feeds the action-data params
        when the action runs from a table."""
        frame = Frame(ret="break")
        inner = Env(env, frame)
        params = sym.decl.params
        if data_args is not None:
            data = [p for p in params if not p.direction]
            names = [self.em.fresh(p.name) for p in data]
            if names:
                self.em.line(f"{''.join(n + ', ' for n in names)}= {data_args}")
            for p, n in zip(data, names, strict=False):
                inner.bind(inner_sym(p), n)
            bound = [(p, a) for p, a in bound] if bound else []
        copyouts = self.bind_params(bound or [], env, inner, by_ref_ok=False)
        frame.copyouts = copyouts
        self.run_inlined(sym.decl.body.stmts, inner, copyouts)

    def function_call(self, c: A.Call, env: Env) -> str:
        """Call a generated P4 function. Returns the value expression (no out params), or
        emits the call and copy-outs and returns the result variable."""
        fsym: FunctionSym = c.func.ref
        fname = self.function_name(fsym.decl)
        args, outs = [], []
        for p, a in c.bound:
            if p.direction in ("out", "inout"):
                outs.append((p, a))
                if p.direction == "out" or a is None:
                    args.append(zero_value(inner_sym(p).type))
                else:
                    v = self.ex(a, env)
                    args.append(v + "._copy()" if is_aggregate(a.type) else v)
            else:
                args.append(self.ex(a, env) if a is not None else "None")
        call = f"{fname}(ctx, _sm, {', '.join(args)})"
        if not outs:
            return call
        res = self.em.fresh("r")
        self.em.line(f"{res} = {call}")
        for i, (_, a) in enumerate(outs):
            if a is not None:
                val = f"{res}[{i + 1}]"
                self.assign(a, val, env)
        return f"{res}[0]"

    def inline_control(self, c: A.Call, env: Env) -> None:
        isym: InstanceSym = c.func.expr.ref
        decl = isym.type.decl
        inst = self.sub_instance(isym, env)
        frame = Frame(ret="break")
        inner = Env(env, frame, inst)
        copyouts = self.bind_params(c.bound, env, inner, by_ref_ok=True)
        frame.copyouts = copyouts
        self.instance_setup(inst, inner)
        self.run_inlined(decl.body.stmts, inner, copyouts)

    def action_name(self, sym) -> str:
        return self.fq_name(sym.decl, sym.owner)


def inner_sym(p: A.Param) -> VarSym | None:
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


def _union_member(e: A.Expr) -> bool:
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


__all__ = ["ApplyResultType", "BoolType", "Instance", "StmtGen", "TableSym", "inner_sym"]
