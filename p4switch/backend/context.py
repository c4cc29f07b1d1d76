"""What the code generators share while one program is generated.

Each part of the generator (expressions, statements, calls, tables, externs, parsers, listed
externs, and the program's stages and instances) is a plain class holding this context; it
reaches the others through it (`ctx.expr.ex(...)`, `ctx.stmt.assign(...)`) and keeps no state
of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..frontend.check import ProgramInfo
from ..frontend.diagnostics import Reporter
from ..frontend.symbols import InstanceSym
from ..frontend.types import EnumType, StructType
from .emitter import Emitter
from .env import Instance
from .model import ModelBuilder

if TYPE_CHECKING:
    from .calls import CallGen
    from .expr import ExprGen
    from .externs import ExternGen
    from .listed import ListedGen
    from .parser import ParserGen
    from .program import ProgramGen
    from .stmt import StmtGen
    from .tables import TableGen, TableInfo


@dataclass(eq=False)
class GenContext:
    info: ProgramInfo
    reporter: Reporter
    model: ModelBuilder
    em: Emitter = field(default_factory=Emitter)  # where code goes now
    bindings: dict[str, str] = field(default_factory=dict)  # make()'s expr -> closure variable
    table_infos: dict[tuple, TableInfo] = field(default_factory=dict)  # (prefix, id(decl))
    profile_tables: dict[str, list[str]] = field(default_factory=dict)  # profile -> tables
    direct_owner: dict[int, str] = field(default_factory=dict)  # id(direct extern sym) -> table
    meter_colors: dict[int, str] = field(default_factory=dict)  # id(direct meter) -> colour local
    digest_types: dict[str, StructType] = field(default_factory=dict)
    prefixes: dict[int, str] = field(default_factory=dict)  # id(block decl) -> instance prefix
    functions: dict[int, str] = field(default_factory=dict)  # id(function decl) -> Python name
    pending_functions: list = field(default_factory=list)  # (decl, name) still to generate
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)  # extern name -> var, sym
    pre: dict[int, str] = field(default_factory=dict)  # expressions already computed into a temp
    action_depth: int = 0  # > 0 while generating an action's body
    in_parser: bool = False
    instance_paths: dict[str, Instance] = field(default_factory=dict)  # prefix -> instance
    enums_used: dict[str, EnumType] = field(default_factory=dict)  # serializable enums in use
    # the externs P4Info lists without their use (listed.py)
    declared_direct: list[tuple[InstanceSym, str | None]] = field(default_factory=list)
    current_function: int | None = None  # id() of the function being generated
    function_calls: dict[int | None, set[int]] = field(default_factory=dict)  # None: a control
    functions_calling_externs: set[int] = field(default_factory=set)
    # the generators, each holding this context
    expr: ExprGen = field(init=False)
    stmt: StmtGen = field(init=False)
    call: CallGen = field(init=False)
    table: TableGen = field(init=False)
    extern: ExternGen = field(init=False)
    parser: ParserGen = field(init=False)
    listed: ListedGen = field(init=False)
    program: ProgramGen = field(init=False)

    @property
    def global_scope(self):
        return self.info.global_scope
