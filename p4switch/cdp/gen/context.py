"""What the C generators share while one program is generated (as backend/context.py for the
Python back end): the program, its C types, where code goes now, and the generators."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from p4switch.backend.env import Env
from p4switch.frontend import ast as A
from p4switch.frontend.check import ProgramInfo

from .emitter import CEmitter
from .types import CTypes

if TYPE_CHECKING:
    from .controls import CControlGen
    from .expr import CExprGen
    from .externs import CExternGen
    from .stmt import CStmtGen

# An extern method or function the statements or expressions of a stage may call, by
# "extern.method" or "function": it emits what it needs and returns its value's C expression.
ExternCall = Callable[[A.Call, Env], str]


@dataclass(eq=False)
class CContext:
    info: ProgramInfo
    types: CTypes = field(default_factory=CTypes)
    em: CEmitter = field(default_factory=CEmitter)
    pre: dict[int, str] = field(default_factory=dict)  # id(expr) -> C computed ahead
    externs: dict[str, ExternCall] = field(default_factory=dict)  # the current stage's
    in_parser: bool = False
    checked: int = 0  # stack accesses checked so far (parser: p4_checked sets `bad_index`)
    fail: Callable[[str], str] | None = None  # parser: the statement that stops with a code
    applied: dict[int, tuple[str, str]] = field(default_factory=dict)  # id(apply call) ->
    # the C locals of its hit flag and its action's number
    controls: CControlGen | None = None  # while a control stage is generated
    expr: CExprGen = field(init=False)
    stmt: CStmtGen = field(init=False)
    externs_gen: CExternGen = field(init=False)

    def error_code(self, name: str) -> int:
        return self.info.errors.index(name)

    def fail_with(self, code: int | str, why: str = "") -> str:
        """The statement that stops the parser with error `code`."""
        assert self.fail is not None, "only a parser stops with an error"
        return self.fail(str(code)) + (f"  /* {why} */" if why else "")
