"""A small C preprocessor for P4 sources.

Supports `#include "f"` / `<f>`, object-like and simple function-like `#define`, `#undef`,
`#if/#ifdef/#ifndef/#elif/#else/#endif` (with `defined`), `#error`; `#line` and `#pragma` are
ignored. Comments are blanked out (newlines kept). The output keeps one output line per source
line, and `line_map[i]` gives the (file, line) that output line `i + 1` came from, so diagnostics
point into the original files.

Files are read by `source.read_source` (a file that cannot be read is an error at its
`#include`); the whole output, every include and macro expanded, is held to
`MAX_SOURCE_BYTES`, includes to `MAX_INCLUDE_DEPTH` levels and #if to `MAX_IF_DEPTH`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import pp_expr
from .diagnostics import Pos, Reporter
from .source import MAX_SOURCE_BYTES, SourceError, read_source

BUNDLED_INCLUDE = Path(__file__).resolve().parent.parent / "p4include"

_IDENT = re.compile(r"[A-Za-z_]\w*")
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[A-Za-z_]\w*|\d\w*|\s+|.', re.S)
_DIRECTIVE = re.compile(r"\s*#\s*(\w*)\s*(.*)$")
MAX_INCLUDE_DEPTH = 50
MAX_IF_DEPTH = 256


class _Stop(Exception):
    """An error after which preprocessing cannot go on (reported at `pos`)."""

    def __init__(self, pos: Pos, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


class _TooLarge(Exception):
    """A macro expansion grew past MAX_SOURCE_BYTES."""


@dataclass
class Macro:
    body: str
    params: list[str] | None = None  # None: object-like


@dataclass
class Preprocessed:
    text: str
    line_map: list[tuple[str, int]]
    sources: dict[str, str] = field(default_factory=dict)  # file -> original text

    @property
    def main_file(self) -> str:
        """The program's own file (its last line is always the output's last)."""
        return self.line_map[-1][0] if self.line_map else "<program>"

    def pos(self, line: int, col: int) -> Pos:
        """Map a 1-based (line, col) of `text` to the original file position (the main file,
        no line, when it is outside the text)."""
        if 1 <= line <= len(self.line_map):
            file, src_line = self.line_map[line - 1]
            return Pos(file, src_line, col)
        return Pos(self.main_file, 0, 0)


def strip_comments(text: str) -> tuple[str, int | None]:
    """Blank out // and /* */ comments (outside strings), keeping newlines; also the offset
    of a /* that is never closed (None when every comment is)."""
    unterminated = None
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                unterminated, j = i, n
            else:
                j += 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out), unterminated


class Preprocessor:
    def __init__(self, include_dirs: Sequence[str | Path] = (),
                 defines: Mapping[str, str] | None = None, reporter: Reporter | None = None):
        self.include_dirs = [Path(d) for d in include_dirs] + [BUNDLED_INCLUDE]
        self.macros: dict[str, Macro] = {k: Macro(str(v)) for k, v in (defines or {}).items()}
        self.reporter = reporter or Reporter()
        self.out_lines: list[str] = []
        self.line_map: list[tuple[str, int]] = []
        self.sources: dict[str, str] = {}
        self._depth = 0
        self._size = 0  # characters of output so far, newlines not counted

    def run(self, text: str, filename: str, directory: Path | None) -> Preprocessed:
        try:
            self._process(text, filename, directory, Pos(filename, 0, 0))
        except _Stop as stop:
            self.reporter.error(stop.pos, stop.message)
        return Preprocessed("\n".join(self.out_lines) + "\n", self.line_map, self.sources)

    # -- files ---------------------------------------------------------------------------
    def _process(self, text: str, filename: str, directory: Path | None,
                 included_at: Pos) -> None:
        if len(text) > MAX_SOURCE_BYTES:
            what = f"#include {filename}: larger" if included_at.line else "larger"
            raise _Stop(included_at, f"{what} than {MAX_SOURCE_BYTES // 1024} KiB, the limit "
                                     "for a source file")
        if self._depth >= MAX_INCLUDE_DEPTH:
            raise _Stop(included_at, f"#include nested more than {MAX_INCLUDE_DEPTH} levels "
                                     "deep (an include of itself?)")
        self.sources[filename] = text
        self._depth += 1
        stripped, unterminated = strip_comments(text)
        if unterminated is not None:
            comment_line = text.count("\n", 0, unterminated) + 1
            col = unterminated - text.rfind("\n", 0, unterminated)
            self.reporter.error(Pos(filename, comment_line, col), "unterminated comment")
        lines = stripped.split("\n")
        stack: list[list[bool]] = []  # [active, seen_true_branch, parent_active]
        i = 0
        while i < len(lines):
            lineno = i + 1
            parts = [lines[i]]
            extra = 0
            while parts[-1].endswith("\\") and i + 1 + extra < len(lines):
                parts[-1] = parts[-1][:-1]
                extra += 1
                parts.append(lines[i + extra])
            line = " ".join(parts)
            active = all(s[0] for s in stack)
            m = _DIRECTIVE.match(line)
            if m:
                self._directive(m.group(1), m.group(2).strip(), stack, active,
                                Pos(filename, lineno, line.find("#") + 1), directory)
                self._emit("", filename, lineno)
            else:
                self._emit(self._expand_line(line, Pos(filename, lineno, 1)) if active else "",
                           filename, lineno)
            for k in range(extra):
                self._emit("", filename, lineno + k + 1)
            i += 1 + extra
        if stack:
            self.reporter.error(Pos(filename, len(lines), 1), "unterminated #if")
        self._depth -= 1

    def _emit(self, text: str, filename: str, lineno: int) -> None:
        self._size += len(text)
        if self._size > MAX_SOURCE_BYTES:
            raise _Stop(Pos(filename, lineno, 1), self._too_large())
        self.out_lines.append(text)
        self.line_map.append((filename, lineno))

    def _expand_line(self, line: str, pos: Pos) -> str:
        try:
            return self.expand(line)
        except _TooLarge:
            raise _Stop(pos, self._too_large()) from None
        except RecursionError:
            raise _Stop(pos, "macro expansion nested too deeply") from None

    @staticmethod
    def _too_large() -> str:
        return (f"the program is larger than {MAX_SOURCE_BYTES // 1024} KiB with its includes "
                "and macros expanded")

    def _include(self, arg: str, pos: Pos, directory: Path | None) -> None:
        arg = self._expand_line(arg, pos).strip()
        if len(arg) < 2 or (arg[0], arg[-1]) not in (('"', '"'), ("<", ">")):
            self.reporter.error(pos, f"#include expects \"file\" or <file>, got {arg!r}")
            return
        name = arg[1:-1]
        dirs = ([directory] if arg[0] == '"' and directory else []) + self.include_dirs
        for d in dirs:
            path = d / name
            if not path.exists():
                continue
            filename = str(path) if d != BUNDLED_INCLUDE else name
            text = self.sources.get(filename)
            if text is None:
                try:
                    text = read_source(path)
                except SourceError as exc:
                    if exc.line == 0:  # the whole file: at the #include
                        self.reporter.error(pos, f"#include {arg}: {exc}")
                    else:
                        self.reporter.error(Pos(exc.file, exc.line, exc.col), exc.message)
                    return
            self._process(text, filename, path.parent, pos)
            return
        self.reporter.error(pos, f"#include file not found: {name}")

    # -- directives ----------------------------------------------------------------------
    def _directive(self, name: str, arg: str, stack: list[list[bool]], active: bool, pos: Pos,
                   directory: Path | None) -> None:
        if name in ("if", "ifdef", "ifndef"):
            if len(stack) >= MAX_IF_DEPTH:
                raise _Stop(pos, f"#{name} nested more than {MAX_IF_DEPTH} levels deep")
            if not active:
                stack.append([False, True])
                return
            if name == "if":
                cond = self._eval(arg, pos)
            else:
                cond = (_first_ident(arg) in self.macros) == (name == "ifdef")
            stack.append([cond, cond])
        elif name in ("elif", "else"):
            if not stack:
                self.reporter.error(pos, f"#{name} without #if")
                return
            top = stack[-1]
            parent_active = all(s[0] for s in stack[:-1])
            if top[1] or not parent_active:
                top[0] = False
            else:
                top[0] = True if name == "else" else self._eval(arg, pos)
                top[1] = top[0]
        elif name == "endif":
            if not stack:
                self.reporter.error(pos, "#endif without #if")
            else:
                stack.pop()
        elif not active:
            return
        elif name == "include":
            self._include(arg, pos, directory)
        elif name == "define":
            self._define(arg, pos)
        elif name == "undef":
            self.macros.pop(_first_ident(arg), None)
        elif name == "error":
            self.reporter.error(pos, f"#error {arg}")
        elif name in ("line", "pragma", "warning", ""):
            return
        else:
            self.reporter.error(pos, f"unknown preprocessor directive #{name}")

    def _define(self, arg: str, pos: Pos) -> None:
        m = re.match(r"([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$", arg, re.S)
        if not m:
            self.reporter.error(pos, "#define needs a name")
            return
        params = None
        if m.group(2) is not None:
            params = [p.strip() for p in m.group(3).split(",") if p.strip()]
        self.macros[m.group(1)] = Macro(m.group(4).strip(), params)

    def _eval(self, expr: str, pos: Pos) -> bool:
        expr = re.sub(r"defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)",
                      lambda m: "1" if (m.group(1) or m.group(2)) in self.macros else "0", expr)
        expr = self._expand_line(expr, pos)
        try:
            return bool(pp_expr.value(expr))
        except (ValueError, ArithmeticError, RecursionError):
            self.reporter.error(pos, f"cannot evaluate #if expression: {expr.strip()[:80]}")
            return False

    # -- macro expansion -----------------------------------------------------------------
    def expand(self, text: str, hide: frozenset[str] = frozenset()) -> str:
        if not self.macros or not _IDENT.search(text):
            return text
        toks = _TOKEN.findall(text)
        out: list[str] = []
        size = 0
        i = 0
        while i < len(toks):
            tok = toks[i]
            if size > MAX_SOURCE_BYTES:
                raise _TooLarge()
            macro = self.macros.get(tok) if tok not in hide else None
            if macro is None:
                out.append(tok)
                size += len(tok)
                i += 1
                continue
            if macro.params is None:
                out.append(self.expand(macro.body, hide | {tok}))
                size += len(out[-1])
                i += 1
                continue
            j = i + 1
            while j < len(toks) and toks[j].isspace():
                j += 1
            if j >= len(toks) or toks[j] != "(":
                out.append(tok)
                i += 1
                continue
            args, j = _collect_args(toks, j)
            body = macro.body
            mapping = dict(zip(macro.params, (self.expand(a, hide) for a in args), strict=False))
            body = "".join(mapping.get(t, t) for t in _TOKEN.findall(body))
            out.append(self.expand(body, hide | {tok}))
            size += len(out[-1])
            i = j
        return "".join(out)


def _collect_args(toks: list[str], j: int) -> tuple[list[str], int]:
    depth = 0
    args: list[str] = []
    cur: list[str] = []
    while j < len(toks):
        t = toks[j]
        j += 1
        if t == "(":
            depth += 1
            if depth == 1:
                continue
        elif t == ")":
            depth -= 1
            if depth == 0:
                args.append("".join(cur))
                break
        elif t == "," and depth == 1:
            args.append("".join(cur))
            cur = []
            continue
        cur.append(t)
    return [a.strip() for a in args if a.strip() or len(args) > 1], j


def _first_ident(arg: str) -> str:
    m = _IDENT.match(arg.strip())
    return m.group(0) if m else ""


def preprocess(text: str, filename: str, include_dirs: Sequence[str | Path] = (),
               defines: Mapping[str, str] | None = None,
               reporter: Reporter | None = None) -> Preprocessed:
    directory = Path(filename).resolve().parent if not filename.startswith("<") else None
    return Preprocessor(include_dirs, defines, reporter).run(text, filename, directory)
