"""What names refer to: the symbols the checker binds to `Name`/`Member` nodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .types import P4Type


@dataclass(eq=False)
class Sym:
    name: str
    type: P4Type


@dataclass(eq=False)
class VarSym(Sym):
    """A local variable or a parameter; `decl` is the ast.VarDecl / ast_decl.Param."""

    decl: Any = None
    direction: str = ""  # for parameters: "", in, out, inout
    is_param: bool = False
    writable: bool = True


@dataclass(eq=False)
class ConstSym(Sym):
    value: Any = None  # int, bool, str, or ("enum"/"error", member)
    decl: Any = None


@dataclass(eq=False)
class ActionSym(Sym):
    decl: Any = None  # ast_decl.ActionDecl
    owner: Any = None  # the ControlDecl declaring it, None at top level


@dataclass(eq=False)
class FunctionSym(Sym):
    decl: Any = None  # ast_decl.FunctionDecl


@dataclass(eq=False)
class ExternFuncSym(Sym):
    overloads: list = field(default_factory=list)  # ast_decl.ExternFuncDecl


@dataclass(eq=False)
class TableSym(Sym):
    decl: Any = None  # ast_decl.TableDecl


@dataclass(eq=False)
class InstanceSym(Sym):
    """An instantiation: extern object, sub-control or sub-parser."""

    decl: Any = None  # ast_decl.Instantiation
    ctor_args: list = field(default_factory=list)  # compile-time values of constructor args


@dataclass(eq=False)
class StateSym(Sym):
    decl: Any = None


class Scope:
    def __init__(self, parent: Scope | None = None, kind: str = "block"):
        self.parent = parent
        self.kind = kind
        self.names: dict[str, Sym] = {}

    def lookup(self, name: str) -> Sym | None:
        s: Scope | None = self
        while s is not None:
            sym = s.names.get(name)
            if sym is not None:
                return sym
            s = s.parent
        return None

    def root(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def enclosing(self, kind: str) -> Scope | None:
        s: Scope | None = self
        while s is not None and s.kind != kind:
            s = s.parent
        return s
