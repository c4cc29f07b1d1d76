"""The declarations of a P4 program's syntax tree: types, externs, functions, actions, tables,
parsers, controls and the program itself; the code they hold is `ast` nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cpmodel import Annotation
from .ast import Arg, Block, Expr, Node, Stmt, TypeRef
from .diagnostics import Pos


# ---- declarations -------------------------------------------------------------------------
@dataclass(eq=False)
class Decl(Node):
    name: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class FieldDecl(Node):
    name: str
    tref: TypeRef
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class StructLikeDecl(Decl):
    kind: str = "struct"  # struct, header, header_union
    fields: list[FieldDecl] = field(default_factory=list)


@dataclass(eq=False)
class EnumDecl(Decl):
    width: int | None = None
    members: list[tuple[str, Expr | None, Pos]] = field(default_factory=list)
    signed: bool = False  # enum int<W>


@dataclass(eq=False)
class TypedefDecl(Decl):
    tref: TypeRef | None = None
    newtype: bool = False


@dataclass(eq=False)
class ErrorDecl(Decl):
    members: list[str] = field(default_factory=list)


@dataclass(eq=False)
class MatchKindDecl(Decl):
    members: list[str] = field(default_factory=list)


@dataclass(eq=False)
class Param(Node):
    name: str
    tref: TypeRef
    direction: str = ""  # "", in, out, inout
    annotations: list[Annotation] = field(default_factory=list)
    default: Expr | None = None
    sym: Any = field(init=False, repr=False)  # checker: its symbols.VarSym


@dataclass(eq=False)
class FunctionProto(Decl):
    ret: TypeRef | None = None
    tparams: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False)
class ExternObjDecl(Decl):
    tparams: list[str] = field(default_factory=list)
    methods: list[FunctionProto] = field(default_factory=list)
    ctors: list[list[Param]] = field(default_factory=list)


@dataclass(eq=False)
class ExternFuncDecl(Decl):
    proto: FunctionProto | None = None


@dataclass(eq=False)
class FunctionDecl(Decl):
    proto: FunctionProto | None = None
    body: Block | None = None


@dataclass(eq=False)
class ActionDecl(Decl):
    params: list[Param] = field(default_factory=list)
    body: Block | None = None


@dataclass(eq=False)
class KeyElement(Node):
    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ActionRefDecl(Node):
    name: str
    args: list[Arg] | None
    annotations: list[Annotation] = field(default_factory=list)
    sym: Any = field(init=False, repr=False)  # checker: the symbols.ActionSym it names
    bound: list = field(init=False, repr=False)  # checker: (parameter, argument)


@dataclass(eq=False)
class EntryDecl(Node):
    keyset: list[Expr]
    action: str
    args: list[Arg]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableProp(Node):
    name: str
    value: Expr
    const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Decl):
    keys: list[KeyElement] | None = None
    actions: list[ActionRefDecl] = field(default_factory=list)
    entries: list[EntryDecl] | None = None
    entries_const: bool = False
    props: dict[str, TableProp] = field(default_factory=dict)
    all_actions: list[ActionRefDecl] = field(init=False, repr=False)  # back end: NoAction added


@dataclass(eq=False)
class Instantiation(Decl):
    tref: TypeRef | None = None
    args: list[Arg] = field(default_factory=list)


@dataclass(eq=False)
class SelectCase(Node):
    keyset: list[Expr]
    state: str


@dataclass(eq=False)
class SelectExpr(Node):
    exprs: list[Expr]
    cases: list[SelectCase]


@dataclass(eq=False)
class ParserState(Decl):
    stmts: list[Stmt] = field(default_factory=list)
    next: str | SelectExpr = "reject"


@dataclass(eq=False)
class BlockTypeDecl(Decl):
    """`parser P<..>(..);`, `control C<..>(..);`, `package Pkg<..>(..);`"""

    kind: str = "control"
    tparams: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(eq=False)
class ParserDecl(Decl):
    tparams: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Node] = field(default_factory=list)
    states: list[ParserState] = field(default_factory=list)
    scope: Any = field(init=False, repr=False)  # checker: its symbols.Scope


@dataclass(eq=False)
class ControlDecl(Decl):
    tparams: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    ctor_params: list[Param] = field(default_factory=list)
    locals: list[Node] = field(default_factory=list)
    body: Block | None = None
    scope: Any = field(init=False, repr=False)  # checker: its symbols.Scope


@dataclass(eq=False)
class Program(Node):
    decls: list[Node]
    main_file: str = "<program>"  # the program's own file, for errors about it as a whole


__all__ = [
    "ActionDecl", "ActionRefDecl", "BlockTypeDecl", "ControlDecl", "Decl", "EntryDecl",
    "EnumDecl", "ErrorDecl", "ExternFuncDecl", "ExternObjDecl", "FieldDecl", "FunctionDecl",
    "FunctionProto", "Instantiation", "KeyElement", "MatchKindDecl", "Param", "ParserDecl",
    "ParserState", "Program", "SelectCase", "SelectExpr", "StructLikeDecl", "TableDecl",
    "TableProp", "TypedefDecl",
]
