"""The syntax tree of a P4 program, as built from the grammar: type references, expressions and
statements (declarations, which hold them, are `ast_decl`).

Fields declared `init=False` are what the type checker adds to a node (absent before it has).
Expressions get their type (`.type`, a `types.P4Type`) filled in by the type checker, which
turns this tree into the typed IR the code generator consumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cpmodel import Annotation
from .diagnostics import Pos


@dataclass(eq=False)
class Node:
    pos: Pos


def annotation(annos: list[Annotation], name: str) -> Annotation | None:
    return next((a for a in annos if a.name == name), None)


def annotation_string(annos: list[Annotation], name: str) -> str | None:
    a = annotation(annos, name)
    if a is None:
        return None
    body = a.body.strip()
    if body.startswith('"') and body.endswith('"'):
        return body[1:-1]
    return body


# ---- syntactic types ----------------------------------------------------------------------
@dataclass(eq=False)
class TypeRef(Node):
    pass


@dataclass(eq=False)
class BaseTypeRef(TypeRef):
    kind: str  # bool, error, string, int, bit, sint, varbit
    width: Any = None  # int or Expr (bit<(expr)>)


@dataclass(eq=False)
class NamedTypeRef(TypeRef):
    name: str
    args: list[TypeRef] | None = None


@dataclass(eq=False)
class StackTypeRef(TypeRef):
    elem: TypeRef
    size: Expr


@dataclass(eq=False)
class TupleTypeRef(TypeRef):
    args: list[TypeRef]


@dataclass(eq=False)
class VoidTypeRef(TypeRef):
    pass


@dataclass(eq=False)
class DontCareTypeRef(TypeRef):
    pass


# ---- expressions --------------------------------------------------------------------------
@dataclass(eq=False)
class Expr(Node):
    def __post_init__(self) -> None:
        self.type: Any = None  # P4Type, set by the checker
        self.const: Any = None  # compile-time value (int/bool/str), when known
        self.ref: Any = None  # Name/Member: the symbol or method it denotes
        self.kind: str = ""  # Call: what is called (action, function, extern_func, ...)


@dataclass(eq=False)
class Const(Expr):
    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""  # as written in the source


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class StringLit(Expr):
    value: str


@dataclass(eq=False)
class Name(Expr):
    name: str
    top: bool = False  # `.name`


@dataclass(eq=False)
class TypeNameExpr(Expr):
    """A type used in expression position: `MyEnum` in `MyEnum.A`, `error` in `error.X`."""

    name: str


@dataclass(eq=False)
class Member(Expr):
    expr: Expr
    name: str


@dataclass(eq=False)
class Index(Expr):
    expr: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    expr: Expr
    hi: Expr
    lo: Expr


@dataclass(eq=False)
class Arg(Node):
    expr: Expr | None  # None: don't care `_`
    name: str | None = None


@dataclass(eq=False)
class Call(Expr):
    func: Expr
    args: list[Arg]
    targs: list[TypeRef] = field(default_factory=list)
    type_env: dict = field(init=False, repr=False)  # checker: type variable -> type
    bound: list = field(init=False, repr=False)  # checker: (parameter, argument or None)
    hoisted: Any = field(init=False, repr=False)  # back end: code computed ahead of its use


@dataclass(eq=False)
class Construct(Expr):
    tref: TypeRef
    args: list[Arg]


@dataclass(eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Unary(Expr):
    op: str
    expr: Expr


@dataclass(eq=False)
class Cast(Expr):
    tref: TypeRef
    expr: Expr


@dataclass(eq=False)
class Cond(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class ListExpr(Expr):
    items: list[Expr]


@dataclass(eq=False)
class StructInit(Expr):
    fields: list[tuple[str, Expr]]


@dataclass(eq=False)
class Mask(Expr):
    value: Expr
    mask: Expr


@dataclass(eq=False)
class Range(Expr):
    lo: Expr
    hi: Expr


@dataclass(eq=False)
class Default(Expr):
    pass


# ---- statements ---------------------------------------------------------------------------
@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Assign(Stmt):
    lhs: Expr
    rhs: Expr
    op: str = "="
    compound: bool = field(init=False, repr=False)  # checker: True on `+=`, `|=`, ...


@dataclass(eq=False)
class CallStmt(Stmt):
    call: Call


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt]


@dataclass(eq=False)
class Exit(Stmt):
    pass


@dataclass(eq=False)
class For(Stmt):
    """`for (init; cond; update) body` (P4 1.2.4)."""

    init: list[Stmt]
    cond: Expr | None
    update: list[Stmt]
    body: Stmt


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    expr: Expr | None


@dataclass(eq=False)
class SwitchCase(Node):
    label: Expr | None  # None: default
    body: Block | None  # None: falls through to the next case


@dataclass(eq=False)
class Switch(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False)
class VarDecl(Stmt):
    tref: TypeRef
    name: str
    init: Expr | None
    annotations: list[Annotation] = field(default_factory=list)
    sym: Any = field(init=False, repr=False)  # checker: its symbols.VarSym


@dataclass(eq=False)
class ConstDecl(Stmt):
    tref: TypeRef
    name: str
    value: Expr
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class Empty(Stmt):
    pass

