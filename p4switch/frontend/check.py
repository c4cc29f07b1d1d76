"""The type checker: declarations, scopes, statements, parsers, controls and tables.

Input: the syntax tree. Output: the same tree with every expression typed (`.type`), names
bound (`.ref`), constants folded (`.const`), plus a `ProgramInfo` describing the program's
types and its V1Switch package. Errors are collected, never raised one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ast as A
from . import ast_decl as D
from .check_call import CallChecker
from .check_expr import BOOL, INT, UNKNOWN, ExprChecker, Unknown
from .check_stmt import StmtChecker
from .diagnostics import Pos, Reporter
from .symbols import ActionSym, ConstSym, ExternFuncSym, FunctionSym, InstanceSym, Scope, StateSym, TableSym, VarSym
from .types import (
    Bits,
    BlockType,
    BoolType,
    DontCareType,
    EnumType,
    ErrorType,
    ExternType,
    MatchKindType,
    P4Type,
    StackType,
    StringType,
    StructType,
    TupleType,
    TypeVar,
    Varbit,
    VoidType,
)

V1SWITCH_ROLES = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum",
                  "deparser")


@dataclass
class ProgramInfo:
    types: dict[str, P4Type] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    match_kinds: list[str] = field(default_factory=list)
    structs: list[StructType] = field(default_factory=list)
    blocks: dict[str, A.Node] = field(default_factory=dict)  # V1Switch role -> Parser/ControlDecl
    block_args: dict[str, list] = field(default_factory=dict)  # role -> ctor arg values
    global_scope: Scope | None = None
    headers_type: StructType | None = None
    meta_type: StructType | None = None
    main_annotations: list = field(default_factory=list)  # of the `main` instance


def _bit_struct(t: P4Type) -> bool:
    """A struct of bit-typed fields only (allowed inside a header)."""
    if not isinstance(t, StructType) or t.kind != "struct":
        return False
    return all(isinstance(ft, (Bits, BoolType)) or (isinstance(ft, EnumType) and ft.width)
               or _bit_struct(ft) for _, ft in t.fields)


class Checker(ExprChecker, CallChecker, StmtChecker):
    def __init__(self, reporter: Reporter):
        self.reporter = reporter
        self.info = ProgramInfo()
        self.types = self.info.types
        self.errors = self.info.errors
        self.scope = Scope(kind="global")
        self.info.global_scope = self.scope
        self._tvars: list[dict[str, P4Type]] = []

    def err(self, pos: Pos | None, msg: str) -> None:
        self.reporter.error(pos, msg)

    # ---- types ---------------------------------------------------------------------------
    def resolve_type(self, tref, env: dict | None = None) -> P4Type:
        if tref is None:
            return VoidType()
        if isinstance(tref, P4Type):
            return tref
        if isinstance(tref, A.BaseTypeRef):
            k = tref.kind
            if k == "bool":
                return BOOL
            if k == "error":
                return ErrorType()
            if k == "string":
                return StringType()
            if k == "int":
                return INT
            if k == "varbit":
                if not isinstance(tref.width, int) or tref.width <= 0:
                    self.err(tref.pos, "varbit needs a positive maximum width")
                    return UNKNOWN
                return Varbit(tref.width)
            width = tref.width
            if isinstance(width, A.Expr):
                self.expr(width, self.scope)
                width = width.const
            if not isinstance(width, int) or width < 0 or (k == "sint" and width < 2):
                self.err(tref.pos, f"invalid width {width}")
                return UNKNOWN
            return Bits(width, k == "sint")
        if isinstance(tref, A.VoidTypeRef):
            return VoidType()
        if isinstance(tref, A.DontCareTypeRef):
            return DontCareType()
        if isinstance(tref, A.NamedTypeRef):
            name = tref.name
            if env is not None and name in env:
                return env[name]
            for tv in reversed(self._tvars):
                if name in tv:
                    return tv[name]
            t = self.types.get(name)
            if t is None and env is not None:
                return TypeVar(name)  # a generic parameter of the callee not bound yet
            if t is None:
                self.err(tref.pos, f"unknown type {name}")
                return UNKNOWN
            if isinstance(t, ExternType) and tref.args:
                args = [self.resolve_type(a, env) for a in tref.args]
                return ExternType(t.decl, dict(zip(t.decl.tparams, args, strict=False)))
            return t
        if isinstance(tref, A.StackTypeRef):
            elem = self.resolve_type(tref.elem, env)
            self.expr(tref.size, self.scope)
            size = tref.size.const
            if not isinstance(elem, StructType) or elem.kind == "struct":
                if not isinstance(elem, Unknown):
                    self.err(tref.pos, "unsupported: arrays of non-header types")
                return UNKNOWN
            if not isinstance(size, int) or size <= 0:
                self.err(tref.size.pos, "header stack size must be a positive constant")
                return UNKNOWN
            return StackType(elem, size)
        if isinstance(tref, A.TupleTypeRef):
            return TupleType([self.resolve_type(a, env) for a in tref.args])
        self.err(tref.pos, "unsupported: this type")
        return UNKNOWN

    # ---- program -------------------------------------------------------------------------
    def check_program(self, prog: D.Program) -> ProgramInfo:
        for d in prog.decls:
            handler = getattr(self, "_d_" + type(d).__name__, None)
            if handler is None:
                if not isinstance(d, A.Empty):
                    self.err(d.pos, f"unsupported: top-level {type(d).__name__}")
                continue
            handler(d)
        if "main" not in self.scope.names:
            self.err(Pos(prog.main_file, 0, 0), "the program has no 'main' package instance")
        return self.info

    def declare(self, scope: Scope, name: str, sym, pos: Pos) -> None:
        old = scope.names.get(name)
        if old is not None and not (isinstance(old, ExternFuncSym)
                                    and isinstance(sym, ExternFuncSym)):
            self.err(pos, f"'{name}' is already declared in this scope")
            return
        scope.names[name] = sym

    def _declare_type(self, name: str, t: P4Type, pos: Pos) -> None:
        if name in self.types:
            self.err(pos, f"type '{name}' is already declared")
        self.types[name] = t

    def _d_ConstDecl(self, d: A.ConstDecl, scope: Scope | None = None) -> None:
        scope = scope or self.scope
        t = self.resolve_type(d.tref)
        self.expr(d.value, scope)
        self.convert(d.value, t, f"constant {d.name}: ")
        if d.value.const is None and not isinstance(d.value.type, Unknown):
            self.err(d.value.pos, f"constant {d.name}: value is not a compile-time constant")
        self.declare(scope, d.name, ConstSym(d.name, t, d.value.const, d), d.pos)

    def _d_StructLikeDecl(self, d: D.StructLikeDecl) -> None:
        t = StructType(d.kind, d.name, [], d.annotations)
        self._declare_type(d.name, t, d.pos)
        for f in d.fields:
            ft = self.resolve_type(f.tref)
            if d.kind == "header_union" and not (isinstance(ft, StructType) and ft.is_header):
                self.err(f.pos, f"header_union member {f.name} must be a header")
            if d.kind == "header" and not isinstance(ft, (Bits, BoolType, Varbit, Unknown)) \
                    and not (isinstance(ft, EnumType) and ft.width is not None) \
                    and not _bit_struct(ft):
                self.err(f.pos, f"header field {f.name}: unsupported type {ft}")
            if isinstance(ft, Bits) and ft.width == 0:
                self.err(f.pos, "unsupported: zero-width fields")
            if any(n == f.name for n, _ in t.fields):
                self.err(f.pos, f"duplicate field {f.name}")
            t.fields.append((f.name, ft))
            t.field_annotations[f.name] = f.annotations
        if d.kind != "header":
            if any(isinstance(ft, Varbit) for _, ft in t.fields):
                self.err(d.pos, f"unsupported: varbit outside a header ({d.name})")
        elif sum(isinstance(ft, Varbit) for _, ft in t.fields) > 1:
            self.err(d.pos, f"unsupported: more than one varbit field in header {d.name}")
        elif not any(isinstance(ft, Unknown) for _, ft in t.fields) and t.fixed_width % 8:
            self.err(d.pos, f"header {d.name} is {t.fixed_width} bits, "
                            "not a whole number of bytes")
        self.info.structs.append(t)

    def _d_EnumDecl(self, d: D.EnumDecl) -> None:
        t = EnumType(d.name, [m[0] for m in d.members], d.width, signed=d.signed)
        if d.width is not None:
            bt = Bits(d.width, d.signed)
            nxt = 0
            for name, value, pos in d.members:
                if value is None:
                    self.err(pos, f"serializable enum member {name} needs a value")
                    continue
                self.expr(value, self.scope)
                self.convert(value, bt)
                if value.const is None:
                    self.err(value.pos, f"enum member {name}: value is not a constant")
                else:
                    nxt = value.const
                t.values[name] = nxt
        self._declare_type(d.name, t, d.pos)

    def _d_TypedefDecl(self, d: D.TypedefDecl) -> None:
        if d.newtype and A.annotation(d.annotations, "p4runtime_translation"):
            self.err(d.pos, "unsupported: @p4runtime_translation")
        # `type` makes a distinct type in P4; the data plane sees the same bits, so it is
        # checked like a typedef (this accepts some conversions p4c would want written out)
        self._declare_type(d.name, self.resolve_type(d.tref), d.pos)

    def _d_ErrorDecl(self, d: D.ErrorDecl) -> None:
        for m in d.members:
            if m in self.errors:
                self.err(d.pos, f"error.{m} is already declared")
            else:
                self.errors.append(m)

    def _d_MatchKindDecl(self, d: D.MatchKindDecl) -> None:
        for m in d.members:
            self.info.match_kinds.append(m)
            self.declare(self.scope, m, ConstSym(m, MatchKindType(), m), d.pos)

    def _d_ExternObjDecl(self, d: D.ExternObjDecl) -> None:
        self._declare_type(d.name, ExternType(d), d.pos)

    def _d_ExternFuncDecl(self, d: D.ExternFuncDecl) -> None:
        old = self.scope.names.get(d.name)
        if isinstance(old, ExternFuncSym):
            old.overloads.append(d)
        else:
            self.declare(self.scope, d.name, ExternFuncSym(d.name, VoidType(), [d]), d.pos)

    def _d_FunctionDecl(self, d: D.FunctionDecl) -> None:
        assert d.proto is not None and d.body is not None  # the parser gives both
        if d.proto.tparams:
            self.err(d.pos, "unsupported: generic functions")
        self.declare(self.scope, d.name, FunctionSym(d.name, VoidType(), d), d.pos)
        fscope = Scope(self.scope, "function")
        self.declare_params(fscope, d.proto.params)
        ret = self.resolve_type(d.proto.ret)
        self.check_body(d.body, fscope, ret_type=ret, where="function")

    def _d_ActionDecl(self, d: D.ActionDecl, scope: Scope | None = None, owner=None) -> None:
        scope = scope or self.scope
        self.declare(scope, d.name, ActionSym(d.name, VoidType(), d, owner), d.pos)
        ascope = Scope(scope, "action")
        self.declare_params(ascope, d.params, action=True)
        assert d.body is not None  # the parser gives it
        self.check_body(d.body, ascope, ret_type=VoidType(), where="action")

    def _d_BlockTypeDecl(self, d: D.BlockTypeDecl) -> None:
        self._declare_type(d.name, BlockType(d.kind, d), d.pos)

    def declare_params(self, scope: Scope, params: list[D.Param], action: bool = False) -> None:
        for p in params:
            t = self.resolve_type(p.tref)
            writable = p.direction in ("out", "inout")
            p.sym = VarSym(p.name, t, p, p.direction, True, writable)
            self.declare(scope, p.name, p.sym, p.pos)

    def _d_Instantiation(self, d: D.Instantiation, scope: Scope | None = None) -> None:
        scope = scope or self.scope
        t = self.resolve_type(d.tref)
        args = []
        for a in d.args:
            if a.expr is not None:
                self.expr(a.expr, scope)
                args.append(a.expr)
        if isinstance(t, BlockType) and t.kind in ("control", "parser"):
            if not isinstance(t.decl, (D.ControlDecl, D.ParserDecl)):
                self.err(d.pos, f"cannot instantiate the type declaration {t.decl.name}")
        elif isinstance(t, BlockType) and t.kind == "package":
            if d.name == "main":
                self._main(d, t)
        elif not isinstance(t, (ExternType, Unknown)):
            self.err(d.pos, f"cannot instantiate {t}")
        self.declare(scope, d.name, InstanceSym(d.name, t, d, args), d.pos)

    def _main(self, d: D.Instantiation, t: BlockType) -> None:
        if t.decl.name != "V1Switch":
            self.err(d.pos, f"unsupported: package {t.decl.name} (only V1Switch)")
            return
        self.info.main_annotations = list(d.annotations)
        if len(d.args) != len(V1SWITCH_ROLES):
            self.err(d.pos, "V1Switch takes 6 arguments")
            return
        for role, a in zip(V1SWITCH_ROLES, d.args, strict=False):
            block = None
            if isinstance(a.expr, A.Construct) and isinstance(a.expr.type, BlockType):
                block = a.expr.type.decl
                self.info.block_args[role] = [x.expr for x in a.expr.args]
            elif isinstance(a.expr, A.Name) and isinstance(a.expr.ref, InstanceSym):
                bt = a.expr.ref.type
                block = bt.decl if isinstance(bt, BlockType) else None
                self.info.block_args[role] = a.expr.ref.ctor_args
            if not isinstance(block, (D.ControlDecl, D.ParserDecl)):
                self.err(a.pos, f"V1Switch {role}: expected a parser or control instance")
                continue
            self.info.blocks[role] = block
        p = self.info.blocks.get("parser")
        if isinstance(p, D.ParserDecl) and len(p.params) == 4:
            h = self.resolve_type(p.params[1].tref)
            m = self.resolve_type(p.params[2].tref)
            self.info.headers_type = h if isinstance(h, StructType) else None
            self.info.meta_type = m if isinstance(m, StructType) else None

    # ---- parsers and controls ------------------------------------------------------------
    def _d_ParserDecl(self, d: D.ParserDecl) -> None:
        self._declare_type(d.name, BlockType("parser", d), d.pos)
        self._tvars.append({})
        scope = Scope(self.scope, "parser")
        d.scope = scope
        self.declare_params(scope, d.params)
        self.declare_params(scope, d.ctor_params)
        for p in d.ctor_params:
            sym = scope.names[p.name]
            if isinstance(sym, VarSym):  # a parameter, declared just above
                sym.writable = False
        for loc in d.locals:
            self.local_decl(loc, scope, d)
        for st in d.states:
            self.declare(scope, st.name, StateSym(st.name, VoidType(), st), st.pos)
        for name in ("accept", "reject"):
            scope.names.setdefault(name, StateSym(name, VoidType(), None))
        if not any(st.name == "start" for st in d.states):
            self.err(d.pos, f"parser {d.name} has no start state")
        for st in d.states:
            self.check_state(st, scope)
        self._tvars.pop()

    def _d_ControlDecl(self, d: D.ControlDecl) -> None:
        self._declare_type(d.name, BlockType("control", d), d.pos)
        scope = Scope(self.scope, "control")
        d.scope = scope
        self.declare_params(scope, d.params)
        self.declare_params(scope, d.ctor_params)
        for p in d.ctor_params:
            sym = scope.names[p.name]
            if isinstance(sym, VarSym):  # a parameter, declared just above
                sym.writable = False
        for loc in d.locals:
            self.local_decl(loc, scope, d)
        assert d.body is not None  # the parser gives it
        self.check_body(d.body, Scope(scope, "apply"), ret_type=VoidType(), where="control")

    def local_decl(self, loc: A.Node, scope: Scope, owner) -> None:
        if isinstance(loc, A.ConstDecl):
            self._d_ConstDecl(loc, scope)
        elif isinstance(loc, A.VarDecl):
            self.stmt(loc, scope)
        elif isinstance(loc, D.Instantiation):
            self._d_Instantiation(loc, scope)
        elif isinstance(loc, D.ActionDecl):
            self._d_ActionDecl(loc, scope, owner)
        elif isinstance(loc, D.TableDecl):
            self.declare(scope, loc.name, TableSym(loc.name, self.table_type(loc), loc), loc.pos)
            self.check_table(loc, scope)
        elif not isinstance(loc, A.Empty):
            self.err(loc.pos, f"unsupported: {type(loc).__name__} here")

