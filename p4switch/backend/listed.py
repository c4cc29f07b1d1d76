"""What p4c puts in P4Info without the program using it (a mixin of the code generator).

- Every counter, meter, register and action profile a block declares is listed, used or not
  (p4c's front end never removes an extern instance). Direct counters and meters no table uses
  are not listed but have ids and count for aliases. An instance whose type is named through a
  typedef is not seen as an extern by p4c: removed if unused.
- An extern function called from a control, or from a function a control calls, makes p4c
  create P4Info's type_info, even empty (calls from parsers do not count).
"""

from __future__ import annotations

from .. import cpmodel as cp
from ..frontend import ast as A
from ..frontend.symbols import InstanceSym
from ..frontend.types import ExternType
from .model import explicit_id, local_name

_LISTED = ("counter", "meter", "register", "action_profile", "action_selector")
_DIRECT = ("direct_counter", "direct_meter")
_COUNTER_UNITS = ("packets", "bytes", "packets_and_bytes")
_METER_UNITS = ("packets", "bytes")


class ListedGen:
    def init_listed(self) -> None:
        self.declared_direct: list[tuple[InstanceSym, str | None]] = []
        self.current_function: int | None = None  # id() of the function being generated
        self.function_calls: dict[int | None, set[int]] = {}  # None: called from a control
        self.functions_calling_externs: set[int] = set()

    # ---- extern instances ------------------------------------------------------------------
    def declare_global_externs(self) -> None:
        for sym in list(self.global_scope.names.values()):
            if isinstance(sym, InstanceSym) and isinstance(sym.type, ExternType):
                self._declare_extern(sym, None)

    def declare_externs(self, decl, prefix: str | None) -> None:
        """The extern instances local to a parser or control instance named `prefix`."""
        for loc in decl.locals:
            if isinstance(loc, A.Instantiation):
                sym = decl.scope.names.get(loc.name)
                if isinstance(sym, InstanceSym) and isinstance(sym.type, ExternType):
                    self._declare_extern(sym, prefix)

    def _declare_extern(self, sym: InstanceSym, prefix: str | None) -> None:
        kind = sym.type.decl.name
        if getattr(sym.decl.tref, "name", kind) != kind:
            return  # through a typedef
        if kind in _DIRECT:
            self.declared_direct.append((sym, prefix))  # attached (or not) by the tables
        elif kind in _LISTED:
            self.extern_instance(sym, prefix)

    def unattached_direct(self, model: cp.ControlPlaneModel) -> list[cp.Counter | cp.Meter]:
        """The declared direct counters and meters no table uses."""
        seen = {c.name for c in model.counters} | {m.name for m in model.meters}
        out: list[cp.Counter | cp.Meter] = []
        for sym, prefix in self.declared_direct:
            name = local_name(sym.decl, prefix)
            if name in seen:
                continue
            seen.add(name)
            annos = [a for a in sym.decl.annotations if a.name not in ("name", "id")]
            eid = explicit_id(sym.decl.annotations)
            unit = sym.ctor_args[0].const
            out.append(cp.Counter(name, annos, eid, _COUNTER_UNITS[unit])
                       if sym.type.decl.name == "direct_counter"
                       else cp.Meter(name, annos, eid, _METER_UNITS[unit]))
        return out

    # ---- extern function calls -------------------------------------------------------------
    def note_function_call(self, decl: A.FunctionDecl) -> None:
        if self.current_function is not None or not self.in_parser:
            self.function_calls.setdefault(self.current_function, set()).add(id(decl))

    def note_extern_function_call(self) -> None:
        if self.current_function is not None:
            self.functions_calling_externs.add(self.current_function)
        elif not self.in_parser:
            self.model.model.calls_extern_functions = True

    def controls_call_extern_functions(self) -> bool:
        """Directly (noted as it happens) or through the functions they call."""
        if self.model.model.calls_extern_functions:
            return True
        seen: set[int] = set()
        todo = list(self.function_calls.get(None, ()))
        while todo:
            fn = todo.pop()
            if fn not in seen:
                seen.add(fn)
                todo.extend(self.function_calls.get(fn, ()))
        return bool(seen & self.functions_calling_externs)
