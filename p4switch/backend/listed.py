"""What p4c puts in P4Info without the program using it (a generator over the shared `GenContext`).

- Every counter, meter, register and action profile a block declares is listed, used or not
  (p4c's front end never removes an extern instance). Direct counters and meters no table uses
  are not listed but have ids and count for aliases. An instance whose type is named through a
  typedef is not seen as an extern by p4c: removed if unused.
- An extern function called from a control, or from a function a control calls, makes p4c
  create P4Info's type_info, even empty (calls from parsers do not count).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import cpmodel as cp
from ..externs import EXTERNS
from ..frontend import ast_decl as D
from ..frontend.symbols import InstanceSym
from ..frontend.types import ExternType
from .model import explicit_id, local_name

if TYPE_CHECKING:
    from .context import GenContext

_PROFILES = ("action_profile", "action_selector")  # listed, though not of EXTERNS


class ListedGen:
    """Externs P4Info lists unused; extern function calls."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    # ---- extern instances ------------------------------------------------------------------
    def declare_global_externs(self) -> None:
        for sym in list(self.ctx.global_scope.names.values()):
            if isinstance(sym, InstanceSym) and isinstance(sym.type, ExternType):
                self._declare_extern(sym, None)

    def declare_externs(self, decl, prefix: str | None) -> None:
        """The extern instances local to a parser or control instance named `prefix`."""
        for loc in decl.locals:
            if isinstance(loc, D.Instantiation):
                sym = decl.scope.names.get(loc.name)
                if isinstance(sym, InstanceSym) and isinstance(sym.type, ExternType):
                    self._declare_extern(sym, prefix)

    def _declare_extern(self, sym: InstanceSym, prefix: str | None) -> None:
        assert isinstance(sym.type, ExternType)  # the caller checked
        kind = sym.type.decl.name
        if getattr(sym.decl.tref, "name", kind) != kind:
            return  # through a typedef
        extern = EXTERNS.get(kind)  # read at each use: a kind registered later counts
        if extern is not None and extern.direct:
            self.ctx.declared_direct.append((sym, prefix))  # attached (or not) by the tables
        elif extern is not None or kind in _PROFILES:
            self.ctx.program.extern_instance(sym, prefix)

    def unattached_direct(self, model: cp.ControlPlaneModel) -> list[cp.Counter | cp.Meter]:
        """The declared direct counters and meters no table uses."""
        seen = {c.name for c in model.counters} | {m.name for m in model.meters}
        out: list[cp.Counter | cp.Meter] = []
        for sym, prefix in self.ctx.declared_direct:
            name = local_name(sym.decl, prefix)
            if name in seen:
                continue
            seen.add(name)
            annos = [a for a in sym.decl.annotations if a.name not in ("name", "id")]
            eid = explicit_id(sym.decl.annotations)
            args = [a.const for a in sym.ctor_args]
            assert isinstance(sym.type, ExternType)  # declared by _declare_extern
            unattached = EXTERNS[sym.type.decl.name].unattached
            assert unattached is not None  # a direct extern's kind makes the entry
            out.append(unattached(name, annos, eid, args))
        return out

    # ---- extern function calls -------------------------------------------------------------
    def note_function_call(self, decl: D.FunctionDecl) -> None:
        if self.ctx.current_function is not None or not self.ctx.in_parser:
            self.ctx.function_calls.setdefault(self.ctx.current_function, set()).add(id(decl))

    def note_extern_function_call(self) -> None:
        if self.ctx.current_function is not None:
            self.ctx.functions_calling_externs.add(self.ctx.current_function)
        elif not self.ctx.in_parser:
            self.ctx.model.model.calls_extern_functions = True

    def controls_call_extern_functions(self) -> bool:
        """Directly (noted as it happens) or through the functions they call."""
        if self.ctx.model.model.calls_extern_functions:
            return True
        seen: set[int] = set()
        todo = list(self.ctx.function_calls.get(None, ()))
        while todo:
            fn = todo.pop()
            if fn not in seen:
                seen.add(fn)
                todo.extend(self.ctx.function_calls.get(fn, ()))
        return bool(seen & self.ctx.functions_calling_externs)
