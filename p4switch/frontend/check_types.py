"""Implicit conversions, operand unification, casts and assignability (a mixin of the
Checker): P4's rules for unsized literals, serializable enums and aggregate initializers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ast as A
from .consteval import wrap
from .symbols import Scope, VarSym
from .types import Bits, BoolType, EnumType, IntLit, P4Type, StackType, StructType, TupleType, TypeVar, same_type

if TYPE_CHECKING:
    from .check import ProgramInfo
    from .diagnostics import Pos, Reporter


class Unknown(P4Type):
    """The type of an expression that already produced an error (suppresses cascades)."""


UNKNOWN = Unknown()


class CheckerParts:
    """What the Checker's parts (this module's ConversionChecker, ExprChecker, CallChecker,
    StmtChecker) use of one another and of `check.Checker`, which has them all: declared here
    for the type checker; nothing of it exists at run time."""

    reporter: Reporter
    info: ProgramInfo
    types: dict[str, P4Type]
    errors: list[str]

    if TYPE_CHECKING:
        def err(self, pos: Pos | None, msg: str) -> None: ...
        def resolve_type(self, tref: Any, env: dict | None = None) -> P4Type: ...
        def declare(self, scope: Scope, name: str, sym: Any, pos: Pos) -> None: ...
        def _d_ConstDecl(self, d: A.ConstDecl, scope: Scope | None = None) -> None: ...
        def convert(self, e: A.Expr, target: P4Type, what: str = "") -> None: ...
        def check_lvalue(self, e: A.Expr, what: str) -> None: ...
        def expr(self, e: A.Expr, scope: Scope) -> P4Type: ...
        def call(self, e: A.Call, scope: Scope) -> P4Type: ...


class ConversionChecker(CheckerParts):
    def convert(self, e: A.Expr, target: P4Type, what: str = "") -> None:
        """Implicitly convert e to `target`, or report why it cannot be."""
        t = e.type
        if t is None or isinstance(t, Unknown) or isinstance(target, (Unknown, TypeVar)):
            return
        if same_type(t, target):
            if isinstance(t, TypeVar):
                e.type = target
            return
        if isinstance(t, IntLit) and isinstance(target, Bits):
            if e.const is None:
                self.err(e.pos, f"{what}cannot infer the width of this expression; "
                                f"cast it to {target}")
            else:
                e.type, e.const = target, wrap(e.const, target)
            return
        if isinstance(t, IntLit) and isinstance(target, IntLit):
            return
        if isinstance(t, EnumType) and t.width is not None and isinstance(target, Bits) \
                and target.width == t.width:
            e.type = target
            return
        if isinstance(target, (StructType, TupleType)) and isinstance(e, (A.ListExpr,
                                                                           A.StructInit)):
            self._convert_aggregate(e, target, what)
            return
        if isinstance(target, StackType) and isinstance(e, A.ListExpr) and \
                len(e.items) == target.size:
            for item in e.items:
                self.convert(item, target.elem, what)
            e.type = target
            return
        self.err(e.pos, f"{what}cannot convert {t} to {target}")

    def _convert_aggregate(self, e, target, what: str) -> None:
        if isinstance(target, TupleType):
            elems = target.elems
            if not isinstance(e, A.ListExpr) or len(e.items) != len(elems):
                self.err(e.pos, f"{what}cannot convert {e.type} to {target}")
                return
            for item, et in zip(e.items, elems, strict=False):
                self.convert(item, et, what)
            e.type = target
            return
        fields = target.fields
        if isinstance(e, A.ListExpr):
            if len(e.items) != len(fields):
                self.err(e.pos, f"{what}{target} has {len(fields)} fields, "
                                f"the list has {len(e.items)}")
                return
            for item, (_, ft) in zip(e.items, fields, strict=False):
                self.convert(item, ft, what)
        else:
            names = [n for n, _ in e.fields]
            if sorted(names) != sorted(n for n, _ in fields):
                self.err(e.pos, f"{what}initializer fields {names} do not match {target}")
                return
            for n, item in e.fields:
                self.convert(item, target.field_type(n), what)
        e.type = target

    def unify(self, a: A.Expr, b: A.Expr, op: str) -> P4Type:
        """The common type of two operands (converting an unsized literal to the other)."""
        ta, tb = a.type, b.type
        if isinstance(ta, Unknown) or isinstance(tb, Unknown):
            return UNKNOWN
        if isinstance(ta, IntLit) and not isinstance(tb, IntLit):
            self.convert(a, tb)
            return b.type
        if isinstance(tb, IntLit) and not isinstance(ta, IntLit):
            self.convert(b, ta)
            return a.type
        if isinstance(ta, TypeVar):
            return tb
        if isinstance(tb, TypeVar) or same_type(ta, tb):
            return ta
        self.err(b.pos, f"{op}: operands have different types: {ta} and {tb}")
        return UNKNOWN

    @staticmethod
    def _castable(src: P4Type, dst: P4Type) -> bool:
        if same_type(src, dst):
            return True
        if isinstance(dst, Bits):
            return isinstance(src, (Bits, IntLit)) or (
                isinstance(src, BoolType) and dst.width == 1 and not dst.signed) or (
                isinstance(src, EnumType) and src.width is not None)
        if isinstance(dst, BoolType):
            return isinstance(src, IntLit) or (isinstance(src, Bits) and src.width == 1
                                               and not src.signed)
        if isinstance(dst, EnumType) and dst.width is not None:
            return isinstance(src, (Bits, IntLit))
        return False

    def is_lvalue(self, e: A.Expr) -> bool:
        if isinstance(e, A.Name):
            sym = e.ref
            return isinstance(sym, VarSym) and sym.writable
        if isinstance(e, A.Member):
            if isinstance(e.ref, tuple) and e.ref[0] == "stack":
                return e.ref[1] in ("next", "last") and self.is_lvalue(e.expr)
            return isinstance(e.expr.type, StructType) and self.is_lvalue(e.expr)
        if isinstance(e, (A.Index, A.Slice)):
            return self.is_lvalue(e.expr)
        return False

    def check_lvalue(self, e: A.Expr, what: str) -> None:
        if isinstance(e.type, Unknown):
            return
        if not self.is_lvalue(e):
            self.err(e.pos, f"{what}: expression is not assignable")
