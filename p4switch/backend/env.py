"""Code generation environments: what each symbol is in the generated code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Frame:
    """One inlined body (action, sub-control) or generated function.

    ret: "return" (a Python function body: `return`) or "break" (inlined in a `while True:`);
    ret_var: where a function's return value goes; copyouts: code run before leaving the whole
    pipeline stage on `exit` (innermost frame first)."""

    ret: str = "return"
    ret_var: str | None = None
    copyouts: list[str] = field(default_factory=list)
    loops: list = field(default_factory=list)  # enclosing for loops' update statements


class Env:
    """A scope of generated code: its bindings, the frame it returns from and the instance whose
    code it is (given to a root environment, inherited by the ones inside it)."""

    def __init__(self, parent: Env | None = None, frame: Frame | None = None,
                 instance: Instance | None = None):
        self.parent = parent
        self.vars: dict[int, Any] = {}
        if parent is None:
            assert instance is not None  # a root environment is one instance's
            self.frame: Frame = frame if frame is not None else Frame()
            self.instance: Instance = instance
        else:
            self.frame = frame if frame is not None else parent.frame
            self.instance = instance if instance is not None else parent.instance

    def bind(self, sym: Any, value: Any) -> None:
        self.vars[id(sym)] = value

    def get(self, sym: Any) -> Any:
        e: Env | None = self
        key = id(sym)
        while e is not None:
            if key in e.vars:
                return e.vars[key]
            e = e.parent
        return None

    def frames(self) -> list[Frame]:
        out = []
        e: Env | None = self
        seen = set()
        while e is not None:
            if id(e.frame) not in seen:
                seen.add(id(e.frame))
                out.append(e.frame)
            e = e.parent
        return out


@dataclass
class Instance:
    """A parser/control instance: its decl and the control-plane name prefix."""

    decl: Any
    prefix: str  # "": a function's (it names nothing of the control plane)
    role: str = ""
    path: tuple = ()  # where p4c meets it: stage, then local positions of the instantiations

    def position(self, decl: Any) -> tuple:
        """Order key of a declaration local to this instance (p4c lists in this order)."""
        locals_ = getattr(self.decl, "locals", [])
        index = next((i for i, d in enumerate(locals_) if d is decl), -1)
        return (*self.path, index)
