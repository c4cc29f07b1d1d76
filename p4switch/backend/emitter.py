"""Indented Python source accumulation and fresh local names."""

from __future__ import annotations

import keyword
import re
from contextlib import contextmanager


def py_ident(name: str) -> str:
    """A P4 field/variable name as a Python identifier (keywords get a trailing _)."""
    name = re.sub(r"\W", "_", name)
    if keyword.iskeyword(name) or name.startswith("_valid") or name in ("self", "cls"):
        return name + "_"
    return name


class Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0
        self._counter = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    @contextmanager
    def indent(self):
        self.level += 1
        mark = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == mark:
                self.line("pass")
            self.level -= 1

    def fresh(self, hint: str = "t") -> str:
        self._counter += 1
        return f"_{re.sub(r'[^A-Za-z0-9]', '_', hint)[:24]}_{self._counter}"

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"
