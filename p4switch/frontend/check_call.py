"""Type checking of calls (a mixin of the Checker): actions, functions, extern functions and
methods, header/stack methods, table and sub-block `apply`, with generic type binding."""

from __future__ import annotations

from . import ast as A
from . import ast_decl as D
from .check_expr import BOOL, UNKNOWN, Unknown
from .check_types import CheckerParts
from .symbols import ActionSym, ExternFuncSym, FunctionSym, Scope
from .types import (
    ApplyResultType,
    BlockType,
    ExternType,
    IntLit,
    ListType,
    P4Type,
    StructInitType,
    StructType,
    TupleType,
    TypeVar,
    VoidType,
)


class CallChecker(CheckerParts):
    def call(self, e: A.Call, scope: Scope) -> P4Type:
        f = e.func
        if isinstance(f, A.Name):
            sym = (scope.root() if f.top else scope).lookup(f.name)
            if sym is None:
                self.err(f.pos, f"undeclared identifier '{f.name}'")
                self._check_args_loose(e, scope)
                return UNKNOWN
            f.ref = sym
            if isinstance(sym, ActionSym):
                e.kind = "action"
                self.bind_args(e, sym.decl.params, scope, {}, f"action {f.name}")
                return VoidType()
            if isinstance(sym, FunctionSym):
                e.kind = "function"
                self.bind_args(e, sym.decl.proto.params, scope, {}, f"function {f.name}")
                return self.resolve_type(sym.decl.proto.ret)
            if isinstance(sym, ExternFuncSym):
                return self._extern_call(e, sym.overloads, scope, {}, "extern_func", f.name)
            self.err(f.pos, f"'{f.name}' is not callable")
            return UNKNOWN
        if not isinstance(f, A.Member):
            self.err(e.pos, "unsupported: call of a computed expression")
            return UNKNOWN
        ft = self.expr(f, scope)
        if isinstance(ft, Unknown):
            self._check_args_loose(e, scope)
            return UNKNOWN
        ref = f.ref
        if not isinstance(ref, tuple):
            self.err(f.pos, f"'{f.name}' is not a method")
            return UNKNOWN
        kind = ref[0]
        if kind == "header":
            e.kind = "header_method"
            self._expect_args(e, 0, f.name)
            return BOOL if f.name == "isValid" else VoidType()
        if kind == "stack":
            e.kind = "stack_method"
            self._expect_args(e, 1, f.name)
            if e.args and e.args[0].expr is not None:
                self.expr(e.args[0].expr, scope)
                if e.args[0].expr.const is None:
                    self.err(e.args[0].pos, f"{f.name} needs a compile-time constant count")
            return VoidType()
        if kind == "table":
            e.kind = "table_apply"
            self._expect_args(e, 0, "apply")
            return ApplyResultType(ref[1])
        if kind == "block":
            bt: BlockType = ref[1]
            e.kind = "parser_apply" if bt.kind == "parser" else "control_apply"
            self.bind_args(e, bt.decl.params, scope, {}, f"{bt.decl.name}.apply")
            return VoidType()
        if kind == "extern":
            et: ExternType = ref[1]
            env = {tp: et.targs.get(tp, TypeVar(tp)) for tp in et.decl.tparams}
            return self._extern_call(e, ref[2], scope, env, "extern_method",
                                     f"{et.decl.name}.{f.name}")
        self.err(f.pos, "unsupported: this call")
        return UNKNOWN

    def _expect_args(self, e: A.Call, n: int, name: str) -> None:
        if len(e.args) != n:
            self.err(e.pos, f"{name} expects {n} argument(s), got {len(e.args)}")

    def _check_args_loose(self, e: A.Call, scope: Scope) -> None:
        for a in e.args:
            if a.expr is not None:
                self.expr(a.expr, scope)

    def _extern_call(self, e: A.Call, overloads, scope: Scope, env: dict, kind: str,
                     name: str) -> P4Type:
        e.kind = kind
        protos: list[D.FunctionProto] = []
        for o in overloads:
            proto = o.proto if isinstance(o, D.ExternFuncDecl) else o
            assert proto is not None  # the parser gives an extern function its prototype
            protos.append(proto)
        fitting = [p for p in protos if _arity_fits(p.params, len(e.args))]
        if not fitting:
            self.err(e.pos, f"{name}: no overload takes {len(e.args)} argument(s)")
            self._check_args_loose(e, scope)
            return UNKNOWN
        proto = fitting[0]
        e.ref = proto
        for tp in proto.tparams:  # the callee's type parameters shadow same-named types
            env[tp] = TypeVar(tp)
        for tp, targ in zip(proto.tparams, e.targs, strict=False):
            env[tp] = self.resolve_type(targ)
        self.bind_args(e, proto.params, scope, env, name)
        e.type_env = env
        ret = self.resolve_type(proto.ret, env)
        if isinstance(ret, TypeVar) and ret.name in env:
            ret = env[ret.name]
        return ret

    # ---- argument binding ----------------------------------------------------------------
    def bind_args(self, e: A.Call, params: list[D.Param], scope: Scope, env: dict,
                  what: str) -> None:
        """Match arguments to parameters (positional or named), bind type variables, convert
        literals and check out/inout arguments are assignable. Sets e.bound: list of
        (param, arg expr or None)."""
        named = [a for a in e.args if a.name is not None]
        if named and len(named) != len(e.args):
            self.err(e.pos, f"{what}: mix of named and positional arguments")
            return
        if named:
            by_name = {a.name: a for a in e.args}
            ordered = [by_name.pop(p.name, None) for p in params]
            for extra in by_name:
                self.err(e.pos, f"{what}: no parameter named '{extra}'")
        else:
            ordered = list(e.args) + [None] * (len(params) - len(e.args))
            if len(e.args) > len(params):
                self.err(e.pos, f"{what} takes {len(params)} argument(s), got {len(e.args)}")
                return
        bound: list[tuple[D.Param, A.Expr | None]] = []
        for p, a in zip(params, ordered, strict=False):
            if a is None:
                if p.default is None and not _optional(p):
                    self.err(e.pos, f"{what}: missing argument for parameter '{p.name}'")
                bound.append((p, p.default))
                if p.default is not None:
                    self.expr(p.default, scope)
                continue
            if a.expr is None:
                if p.direction != "out":
                    self.err(a.pos, f"{what}: '_' is only allowed for out parameters")
                bound.append((p, None))
                continue
            self.expr(a.expr, scope)
            bound.append((p, a.expr))
        # bind type variables from sized arguments first, then convert the rest
        for p, value in bound:
            if value is not None:
                pt = self.resolve_type(p.tref, env)
                _bind(pt, value.type, env)
        for p, value in bound:
            if value is None:
                continue
            pt = self.resolve_type(p.tref, env)
            if isinstance(pt, TypeVar):
                pt = env.get(pt.name, pt)
            if isinstance(pt, TypeVar):
                if isinstance(value.type, IntLit):
                    self.err(value.pos, f"{what}: cannot infer the width of argument "
                                        f"'{p.name}'; use a sized literal")
                elif isinstance(value.type, (ListType, StructInitType)):
                    value.type = _list_as_tuple(value.type)
            else:
                self.convert(value, pt, f"{what}: argument '{p.name}': ")
            if p.direction in ("out", "inout"):
                self.check_lvalue(value, f"{what}: argument '{p.name}' ({p.direction})")
        e.bound = bound


def _optional(p: D.Param) -> bool:
    return any(an.name == "optional" for an in p.annotations)


def _arity_fits(params: list[D.Param], n: int) -> bool:
    required = sum(1 for p in params if p.default is None and not _optional(p))
    return required <= n <= len(params)


def _bind(pt: P4Type, at: P4Type, env: dict) -> None:
    unbound = isinstance(env.get(pt.name), TypeVar) if isinstance(pt, TypeVar) else False
    if isinstance(pt, TypeVar) and (unbound or pt.name not in env) and at is not None and \
            not isinstance(at, (IntLit, Unknown, TypeVar)):
        env[pt.name] = _list_as_tuple(at) if isinstance(at, (ListType, StructInitType)) else at


def _list_as_tuple(t: P4Type) -> P4Type:
    if isinstance(t, ListType):
        return TupleType(list(t.elems))
    if isinstance(t, StructInitType):
        return StructType("struct", "{anonymous}", list(t.fields))
    return t

