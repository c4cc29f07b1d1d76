"""Indented C source, fresh names, and the locals of the function being generated."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local bool true false NULL main
    """.split())


def c_ident(name: str) -> str:
    """A P4 name as a C identifier: keywords and names ending in `_` get a trailing `_`, so
    no field can be called `valid_` (a header's validity) and no two names meet."""
    name = re.sub(r"\W", "_", name)
    return name + "_" if name in C_KEYWORDS or name.endswith("_") else name


class CEmitter:
    """Lines of C in the making; `declare` collects the locals of the current function,
    which `function` puts at its top (a parser's states jump over declarations otherwise)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0
        self.decls: list[str] = []
        self._counter = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text if text else "")

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:;")

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        """`head {` ... `}` around what the body emits."""
        self.line(head + " {" if head else "{")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")

    def fresh(self, hint: str = "t") -> str:
        self._counter += 1
        return f"{re.sub(r'[^A-Za-z0-9]', '_', hint)[:24]}_{self._counter}"

    def declare(self, ctype: str, hint: str, init: str = "0") -> str:
        """A new local of the current function (arrays and structs start zeroed)."""
        name = self.fresh(hint)
        self.decls.append(f"{ctype} {name} = {init};")
        return name

    @contextmanager
    def function(self, signature: str) -> Iterator[None]:
        """A function: its body, then its locals moved up front."""
        outer_lines, outer_decls, outer_level = self.lines, self.decls, self.level
        self.lines, self.decls, self.level = [], [], 1
        try:
            yield
        finally:
            body, decls = self.lines, self.decls
            self.lines, self.decls, self.level = outer_lines, outer_decls, outer_level
            self.line(signature)
            self.line("{")
            self.lines.extend("    " + d for d in decls)
            self.lines.extend(body)
            self.line("}")
            self.line("")

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"
