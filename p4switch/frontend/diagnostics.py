"""Compiler diagnostics as p4c prints them, `file:line:col: error: message` (`file: error:
message` when the fault is the whole file), collected so every error is reported at once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        where = self.file if self.line == 0 else f"{self.file}:{self.line}:{self.col}"
        return f"{where}: error: {self.message}"


class P4CompileError(Exception):
    """The program could not be compiled; `diagnostics` lists every error found."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class UnsupportedConstruct(Exception):
    """Valid P4 the back end cannot generate code for; compiling reports it as a diagnostic at
    `pos` (`Reporter.unsupported`)."""

    def __init__(self, pos: Pos | None, what: str):
        super().__init__(what)
        self.pos = pos
        self.what = what


@dataclass(frozen=True)
class Pos:
    """A position in the original source (after mapping through includes)."""

    file: str
    line: int
    col: int


NOWHERE = Pos("<builtin>", 0, 0)


class Reporter:
    """Collects diagnostics; `check()` raises P4CompileError when any were recorded."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def error(self, pos: Pos | None, message: str) -> None:
        pos = pos or NOWHERE
        diag = Diagnostic(pos.file, pos.line, pos.col, message)
        if diag not in self.diagnostics:
            self.diagnostics.append(diag)

    def unsupported(self, pos: Pos | None, construct: str) -> None:
        self.error(pos, f"unsupported: {construct}")

    def check(self) -> None:
        if self.diagnostics:
            raise P4CompileError(self.diagnostics)
