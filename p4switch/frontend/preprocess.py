"""A small C preprocessor for P4 sources.

Supports `#include "f"` / `<f>`, object-like and simple function-like `#define`, `#undef`,
`#if/#ifdef/#ifndef/#elif/#else/#endif` (with `defined`), `#error`; `#line` and `#pragma` are
ignored. Comments are blanked out (newlines kept). The output keeps one output line per source
line, and `line_map[i]` gives the (file, line) that output line `i + 1` came from, so diagnostics
point into the original files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .diagnostics import Pos, Reporter

BUNDLED_INCLUDE = Path(__file__).resolve().parent.parent / "p4include"

_IDENT = re.compile(r"[A-Za-z_]\w*")
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[A-Za-z_]\w*|\d\w*|\s+|.', re.S)
_DIRECTIVE = re.compile(r"\s*#\s*(\w*)\s*(.*)$")


@dataclass
class Macro:
    body: str
    params: list[str] | None = None  # None: object-like


@dataclass
class Preprocessed:
    text: str
    line_map: list[tuple[str, int]]
    sources: dict[str, str] = field(default_factory=dict)  # file -> original text

    def pos(self, line: int, col: int) -> Pos:
        """Map a 1-based (line, col) of `text` to the original file position."""
        if 1 <= line <= len(self.line_map):
            file, src_line = self.line_map[line - 1]
            return Pos(file, src_line, col)
        return Pos("<unknown>", line, col)


def strip_comments(text: str) -> str:
    """Blank out // and /* */ comments (outside strings), keeping newlines."""
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
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


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

    def run(self, text: str, filename: str, directory: Path | None) -> Preprocessed:
        self._process(text, filename, directory)
        return Preprocessed("\n".join(self.out_lines) + "\n", self.line_map, self.sources)

    # -- files ---------------------------------------------------------------------------
    def _process(self, text: str, filename: str, directory: Path | None) -> None:
        self.sources[filename] = text
        self._depth += 1
        if self._depth > 50:
            self.reporter.error(Pos(filename, 1, 1), "#include nested too deeply")
            return
        lines = strip_comments(text).split("\n")
        stack: list[list[bool]] = []  # [active, seen_true_branch, parent_active]
        i = 0
        while i < len(lines):
            lineno = i + 1
            line = lines[i]
            extra = 0
            while line.endswith("\\") and i + 1 + extra < len(lines):
                extra += 1
                line = line[:-1] + " " + lines[i + extra]
            active = all(s[0] for s in stack)
            m = _DIRECTIVE.match(line)
            if m:
                self._directive(m.group(1), m.group(2).strip(), stack, active,
                                Pos(filename, lineno, line.find("#") + 1), directory)
                self._emit("", filename, lineno)
            else:
                self._emit(self.expand(line) if active else "", filename, lineno)
            for k in range(extra):
                self._emit("", filename, lineno + k + 1)
            i += 1 + extra
        if stack:
            self.reporter.error(Pos(filename, len(lines), 1), "unterminated #if")
        self._depth -= 1

    def _emit(self, text: str, filename: str, lineno: int) -> None:
        self.out_lines.append(text)
        self.line_map.append((filename, lineno))

    def _include(self, arg: str, pos: Pos, directory: Path | None) -> None:
        arg = self.expand(arg).strip()
        if len(arg) < 2 or (arg[0], arg[-1]) not in (('"', '"'), ("<", ">")):
            self.reporter.error(pos, f"#include expects \"file\" or <file>, got {arg!r}")
            return
        name = arg[1:-1]
        dirs = ([directory] if arg[0] == '"' and directory else []) + self.include_dirs
        for d in dirs:
            path = d / name
            if path.is_file():
                self._process(path.read_text(), str(path) if d != BUNDLED_INCLUDE else name,
                              path.parent)
                return
        self.reporter.error(pos, f"#include file not found: {name}")

    # -- directives ----------------------------------------------------------------------
    def _directive(self, name: str, arg: str, stack: list[list[bool]], active: bool, pos: Pos,
                   directory: Path | None) -> None:
        if name in ("if", "ifdef", "ifndef"):
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
        expr = self.expand(expr)
        py: list[str] = []
        for tok in _TOKEN.findall(expr):
            if tok.isspace():
                continue
            if _IDENT.fullmatch(tok):
                py.append("0")
            elif tok[0].isdigit():
                py.append(str(int(tok.rstrip("uUlL"), 0)) if tok[:2].lower() in ("0x", "0b")
                          else str(int(tok.rstrip("uUlL"))))
            else:
                py.append(tok)
        text = " ".join(py)
        text = (text.replace("& &", " and ").replace("| |", " or ").replace("! =", "!=")
                .replace("= =", "==").replace("< =", "<=").replace("> =", ">=")
                .replace("< <", "<<").replace("> >", ">>"))
        text = re.sub(r"!(?!=)", " not ", text)
        try:
            return bool(eval(text, {"__builtins__": {}}, {}))
        except Exception:
            self.reporter.error(pos, f"cannot evaluate #if expression: {expr.strip()}")
            return False

    # -- macro expansion -----------------------------------------------------------------
    def expand(self, text: str, hide: frozenset[str] = frozenset()) -> str:
        if not self.macros or not _IDENT.search(text):
            return text
        toks = _TOKEN.findall(text)
        out: list[str] = []
        i = 0
        while i < len(toks):
            tok = toks[i]
            macro = self.macros.get(tok) if tok not in hide else None
            if macro is None:
                out.append(tok)
                i += 1
                continue
            if macro.params is None:
                out.append(self.expand(macro.body, hide | {tok}))
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
