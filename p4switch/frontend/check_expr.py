"""Type checking of expressions (a mixin of the Checker): types, implicit conversions of
unsized literals, constant folding, and what each name and call refers to."""

from __future__ import annotations

from . import ast as A
from . import ast_decl as D
from .check_types import UNKNOWN, ConversionChecker, Unknown
from .consteval import fold_binary, fold_cast, fold_unary, wrap
from .symbols import ActionSym, ConstSym, ExternFuncSym, FunctionSym, InstanceSym, Scope
from .types import (
    ActionRunType,
    ApplyResultType,
    Bits,
    BlockType,
    BoolType,
    DontCareType,
    EnumType,
    ErrorType,
    ExternType,
    IntLit,
    ListType,
    MethodType,
    P4Type,
    StackType,
    StringType,
    StructInitType,
    StructType,
    TableType,
    TupleType,
    VoidType,
)

BOOL = BoolType()
INT = IntLit()
COMPARE = {"==", "!=", "<", ">", "<=", ">="}
HEADER_METHODS = {"isValid": BOOL, "setValid": VoidType(), "setInvalid": VoidType()}


class ExprChecker(ConversionChecker):
    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: A.Expr, scope: Scope) -> P4Type:
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            self.err(e.pos, f"unsupported: expression {type(e).__name__}")
            e.type = UNKNOWN
        else:
            e.type = method(e, scope) or UNKNOWN
        return e.type

    def _e_Const(self, e: A.Const, scope) -> P4Type:
        if e.width is None:
            e.const = e.value
            return INT
        if e.width <= 0 or (e.signed and e.width < 2):
            self.err(e.pos, f"invalid width {e.width} in literal")
            return UNKNOWN
        t = Bits(e.width, e.signed)
        e.const = wrap(e.value, t)
        return t

    def _e_BoolLit(self, e: A.BoolLit, scope) -> P4Type:
        e.const = e.value
        return BOOL

    def _e_StringLit(self, e: A.StringLit, scope) -> P4Type:
        e.const = e.value
        return StringType()

    def _e_Name(self, e: A.Name, scope: Scope) -> P4Type:
        sym = (scope.root() if e.top else scope).lookup(e.name)
        if sym is None:
            self.err(e.pos, f"undeclared identifier '{e.name}'")
            return UNKNOWN
        e.ref = sym
        if isinstance(sym, ConstSym):
            e.const = sym.value
        if isinstance(sym, (ActionSym, FunctionSym, ExternFuncSym)):
            return MethodType(type(sym).__name__, sym)
        return sym.type

    def _e_TypeNameExpr(self, e: A.TypeNameExpr, scope) -> P4Type:
        self.err(e.pos, f"type {e.name} used as a value")
        return UNKNOWN

    def _e_Member(self, e: A.Member, scope: Scope) -> P4Type:
        if isinstance(e.expr, A.TypeNameExpr):
            return self._type_member(e)
        t = self.expr(e.expr, scope)
        name = e.name
        if isinstance(t, Unknown):
            return UNKNOWN
        if isinstance(t, StructType):
            ft = t.field_type(name)
            if ft is not None:
                return ft
            if (t.kind == "header" and name in HEADER_METHODS) or \
                    (t.kind == "header_union" and name in ("isValid", "setInvalid")):
                e.ref = ("header", name)
                return MethodType("header", name)
            self.err(e.pos, f"{t} has no field '{name}'")
            return UNKNOWN
        if isinstance(t, StackType):
            if name in ("next", "last"):
                e.ref = ("stack", name)
                return t.elem
            if name in ("lastIndex", "size", "nextIndex"):
                e.ref = ("stack", name)
                if name == "size":
                    e.const = t.size
                return Bits(32)
            if name in ("push_front", "pop_front"):
                e.ref = ("stack", name)
                return MethodType("stack", name)
            self.err(e.pos, f"header stack has no member '{name}'")
            return UNKNOWN
        if isinstance(t, ExternType):
            methods = [m for m in t.decl.methods if m.name == name]
            if not methods:
                self.err(e.pos, f"extern {t.decl.name} has no method '{name}'")
                return UNKNOWN
            e.ref = ("extern", t, methods)
            return MethodType("extern", name)
        if isinstance(t, TableType) and name == "apply":
            e.ref = ("table", t.decl)
            return MethodType("table_apply", t.decl)
        if isinstance(t, ApplyResultType) and name in ("hit", "miss", "action_run"):
            return ActionRunType(t.table) if name == "action_run" else BOOL
        if isinstance(t, BlockType) and name == "apply":
            e.ref = ("block", t)
            return MethodType("block_apply", t)
        self.err(e.pos, f"{t} has no member '{name}'")
        return UNKNOWN

    def _type_member(self, e: A.Member) -> P4Type:
        assert isinstance(e.expr, A.TypeNameExpr)  # the caller checked
        tname = e.expr.name
        if tname == "error":
            if e.name not in self.errors:
                self.err(e.pos, f"error.{e.name} is not declared")
                return UNKNOWN
            e.const = self.errors.index(e.name)
            return ErrorType()
        t = self.types.get(tname)
        if isinstance(t, BlockType) and e.name == "apply" and \
                isinstance(t.decl, (D.ControlDecl, D.ParserDecl)):
            # direct invocation: an implicit instance named after the type
            inst = D.Instantiation(e.pos, tname, [], A.NamedTypeRef(e.pos, tname), [])
            e.expr.ref = InstanceSym(tname, t, inst, [])
            e.ref = ("block", t)
            return MethodType("block_apply", t)
        if isinstance(t, EnumType):
            if e.name not in t.members:
                self.err(e.pos, f"{tname} has no member '{e.name}'")
                return UNKNOWN
            e.const = t.value(e.name)
            return t
        self.err(e.pos, f"type {tname} has no member '{e.name}'")
        return UNKNOWN

    def _e_Index(self, e: A.Index, scope: Scope) -> P4Type:
        t = self.expr(e.expr, scope)
        it = self.expr(e.index, scope)
        if isinstance(t, Unknown):
            return UNKNOWN
        if not isinstance(it, (Bits, IntLit, Unknown)):
            self.err(e.index.pos, f"array index must be a number, not {it}")
        if isinstance(t, StackType):
            if e.index.const is not None and not 0 <= e.index.const < t.size:
                self.err(e.index.pos, f"index {e.index.const} out of bounds for {t}")
            if isinstance(it, IntLit) and e.index.const is None:
                self.err(e.index.pos, "cannot infer the width of the index")
            return t.elem
        if isinstance(t, TupleType) and e.index.const is not None and \
                0 <= e.index.const < len(t.elems):
            return t.elems[e.index.const]
        self.err(e.pos, f"cannot index a value of type {t}")
        return UNKNOWN

    def _e_Slice(self, e: A.Slice, scope: Scope) -> P4Type:
        t = self.expr(e.expr, scope)
        self.expr(e.hi, scope)
        self.expr(e.lo, scope)
        if isinstance(t, Unknown):
            return UNKNOWN
        hi, lo = e.hi.const, e.lo.const
        if not isinstance(hi, int) or not isinstance(lo, int):
            self.err(e.pos, "slice bounds must be compile-time constants")
            return UNKNOWN
        if isinstance(t, IntLit) and e.expr.const is not None:
            e.const = (e.expr.const >> lo) & ((1 << (hi - lo + 1)) - 1)
            return Bits(hi - lo + 1)
        if not isinstance(t, Bits):
            self.err(e.pos, f"cannot slice a value of type {t}")
            return UNKNOWN
        if not 0 <= lo <= hi < t.width:
            self.err(e.pos, f"slice [{hi}:{lo}] out of range for {t}")
            return UNKNOWN
        if e.expr.const is not None:
            e.const = (e.expr.const >> lo) & ((1 << (hi - lo + 1)) - 1)
        return Bits(hi - lo + 1)

    def _e_Binary(self, e: A.Binary, scope: Scope) -> P4Type:
        op = e.op
        ta, tb = self.expr(e.left, scope), self.expr(e.right, scope)
        if isinstance(ta, Unknown) or isinstance(tb, Unknown):
            return UNKNOWN
        operand: P4Type
        if op in ("&&", "||"):
            for side, t in ((e.left, ta), (e.right, tb)):
                if not isinstance(t, BoolType):
                    self.err(side.pos, f"{op} needs bool operands, not {t}")
            rt: P4Type = BOOL
            operand = BOOL
        elif op in ("<<", ">>"):
            if (isinstance(tb, Bits) and tb.signed) or not isinstance(tb, (Bits, IntLit)):
                self.err(e.right.pos, f"shift amount must be unsigned, not {tb}")
                return UNKNOWN
            if isinstance(tb, IntLit) and e.right.const is not None and e.right.const < 0:
                self.err(e.right.pos, "negative shift amount")
                return UNKNOWN
            if isinstance(ta, IntLit) and e.right.const is None:
                self.err(e.left.pos, "cannot infer the width of the shifted value; cast it")
                return UNKNOWN
            if not isinstance(ta, (Bits, IntLit)):
                self.err(e.left.pos, f"cannot shift a value of type {ta}")
                return UNKNOWN
            rt = operand = ta
        elif op == "++":
            if not isinstance(ta, Bits) or not isinstance(tb, Bits):
                self.err(e.pos, f"++ needs sized operands, not {ta} and {tb}")
                return UNKNOWN
            rt, operand = Bits(ta.width + tb.width, ta.signed), tb
        else:
            operand = self.unify(e.left, e.right, op)
            if isinstance(operand, Unknown):
                return UNKNOWN
            if op in COMPARE:
                rt = BOOL
                if op not in ("==", "!=") and not isinstance(operand, (Bits, IntLit)):
                    self.err(e.pos, f"{op} needs numeric operands, not {operand}")
                elif isinstance(operand, StructType) and operand.kind == "header_union":
                    self.err(e.pos, "unsupported: comparing header unions")
            else:
                rt = operand
                if not isinstance(operand, (Bits, IntLit)):
                    self.err(e.pos, f"{op} needs numeric operands, not {operand}")
                    return UNKNOWN
                if op in ("/", "%") and isinstance(operand, Bits) and operand.signed:
                    self.err(e.pos, f"unsupported: {op} on signed values")
        a, b = e.left.const, e.right.const
        if a is not None and b is not None:
            e.const = fold_binary(op, a, b, rt, operand)
        elif isinstance(rt, IntLit):
            self.err(e.pos, "cannot infer the width of this expression")
        return rt

    def _e_Unary(self, e: A.Unary, scope: Scope) -> P4Type:
        t = self.expr(e.expr, scope)
        if isinstance(t, Unknown):
            return UNKNOWN
        ok = isinstance(t, BoolType) if e.op == "!" else isinstance(t, (Bits, IntLit))
        if not ok:
            self.err(e.pos, f"operator {e.op} cannot be applied to {t}")
            return UNKNOWN
        if e.op == "~" and isinstance(t, IntLit):
            self.err(e.pos, "cannot infer the width for ~; use a sized literal")
            return UNKNOWN
        if e.expr.const is not None:
            e.const = fold_unary(e.op, e.expr.const, t)
        return t

    def _e_Cast(self, e: A.Cast, scope: Scope) -> P4Type:
        dst = self.resolve_type(e.tref)
        src = self.expr(e.expr, scope)
        if isinstance(src, Unknown) or isinstance(dst, Unknown):
            return UNKNOWN
        if isinstance(dst, (StructType, TupleType)) and isinstance(e.expr, (A.ListExpr,
                                                                         A.StructInit)):
            self.convert(e.expr, dst)
            return dst
        if not self._castable(src, dst):
            self.err(e.pos, f"cannot cast {src} to {dst}")
            return UNKNOWN
        if e.expr.const is not None:
            e.const = fold_cast(e.expr.const, src, dst)
        return dst

    def _e_Cond(self, e: A.Cond, scope: Scope) -> P4Type:
        tc = self.expr(e.cond, scope)
        if not isinstance(tc, (BoolType, Unknown)):
            self.err(e.cond.pos, f"condition must be bool, not {tc}")
        self.expr(e.then, scope)
        self.expr(e.other, scope)
        t = self.unify(e.then, e.other, "?:")
        if isinstance(t, IntLit) and e.cond.const is None:
            self.err(e.pos, "cannot infer the width of ?: operands; cast one of them")
        if e.cond.const is not None:
            e.const = (e.then if e.cond.const else e.other).const
        return t

    def _e_ListExpr(self, e: A.ListExpr, scope: Scope) -> P4Type:
        return ListType([self.expr(i, scope) for i in e.items])

    def _e_StructInit(self, e: A.StructInit, scope: Scope) -> P4Type:
        return StructInitType([(n, self.expr(v, scope)) for n, v in e.fields])

    def _e_Construct(self, e: A.Construct, scope: Scope) -> P4Type:
        t = self.resolve_type(e.tref)
        for a in e.args:
            if a.expr is not None:
                self.expr(a.expr, scope)
        if not isinstance(t, (ExternType, BlockType, Unknown)):
            self.err(e.pos, f"cannot instantiate {t}")
            return UNKNOWN
        return t

    def _e_Call(self, e: A.Call, scope: Scope) -> P4Type:
        return self.call(e, scope)

    def _e_Default(self, e, scope) -> P4Type:
        return DontCareType()
