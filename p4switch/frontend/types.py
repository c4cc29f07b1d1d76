"""P4 types of the typed IR."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class P4Type:
    def __str__(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class Bits(P4Type):
    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class Varbit(P4Type):
    """varbit<N>: held at run time as (value, current width in bits)."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class BoolType(P4Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class IntLit(P4Type):
    """Arbitrary-precision `int`: the type of unsized literals and compile-time arithmetic."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class StringType(P4Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType(P4Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ErrorType(P4Type):
    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindType(P4Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True)
class DontCareType(P4Type):
    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class TypeVar(P4Type):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class StructType(P4Type):
    kind: str  # struct, header, header_union
    name: str
    fields: list[tuple[str, P4Type]] = field(default_factory=list)
    annotations: list = field(default_factory=list)
    field_annotations: dict[str, list] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name

    def field_type(self, name: str) -> P4Type | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    @property
    def is_header(self) -> bool:
        return self.kind == "header"

    @property
    def width(self) -> int:
        return sum(bit_width(t) for _, t in self.fields)

    @property
    def varbit(self) -> str | None:
        """The name of the header's varbit field, if it has one."""
        return next((n for n, t in self.fields if isinstance(t, Varbit)), None)

    @property
    def fixed_width(self) -> int:
        return sum(bit_width(t) for _, t in self.fields if not isinstance(t, Varbit))


@dataclass(eq=False)
class StackType(P4Type):
    elem: StructType
    size: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(eq=False)
class EnumType(P4Type):
    name: str
    members: list[str]
    width: int | None = None  # serializable enum's underlying bit<W>
    values: dict[str, int] = field(default_factory=dict)
    signed: bool = False

    def __str__(self) -> str:
        return self.name

    def value(self, member: str) -> int:
        """A member's value as the data plane holds it: a serializable enum's bits (an
        int<W> member's two's complement, as a field of the enum extracted from a packet),
        else the member's index."""
        if self.width is None:
            return self.members.index(member)
        return self.values[member] & ((1 << self.width) - 1)


@dataclass(eq=False)
class TupleType(P4Type):
    elems: list[P4Type]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elems)) + ">"


@dataclass(eq=False)
class ListType(P4Type):
    """The type of a `{a, b}` list expression before it meets its context."""

    elems: list[P4Type]

    def __str__(self) -> str:
        return "{" + ", ".join(map(str, self.elems)) + "}"


@dataclass(eq=False)
class StructInitType(P4Type):
    fields: list[tuple[str, P4Type]]

    def __str__(self) -> str:
        return "{" + ", ".join(f"{n} = {t}" for n, t in self.fields) + "}"


@dataclass(eq=False)
class ExternType(P4Type):
    decl: Any  # ast_decl.ExternObjDecl
    targs: dict[str, P4Type] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.decl.name


@dataclass(eq=False)
class BlockType(P4Type):
    """A parser, control or package type (declaration or prototype)."""

    kind: str
    decl: Any

    def __str__(self) -> str:
        return self.decl.name


@dataclass(eq=False)
class TableType(P4Type):
    decl: Any

    def __str__(self) -> str:
        return f"table {self.decl.name}"


@dataclass(eq=False)
class ApplyResultType(P4Type):
    table: Any  # ast_decl.TableDecl


@dataclass(eq=False)
class ActionRunType(P4Type):
    table: Any


@dataclass(eq=False)
class MethodType(P4Type):
    """A method or function reference (only ever called)."""

    kind: str
    target: Any = None


def bit_width(t: P4Type) -> int:
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, Varbit):
        raise TypeError(f"{t} has no fixed bit width")
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType) and t.width is not None:
        return t.width
    if isinstance(t, StructType):
        return t.width
    if isinstance(t, StackType):
        return t.elem.width * t.size
    raise TypeError(f"{t} has no fixed bit width")


def same_type(a: P4Type, b: P4Type) -> bool:
    if a is b or a == b:
        return True
    if isinstance(a, TypeVar) or isinstance(b, TypeVar):
        return True
    if isinstance(a, StackType) and isinstance(b, StackType):
        return a.size == b.size and same_type(a.elem, b.elem)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elems) == len(b.elems) and all(map(same_type, a.elems, b.elems))
    return False


def is_numeric(t: P4Type) -> bool:
    return isinstance(t, (Bits, IntLit))
