"""Type-name feedback for the lexer.

P4, like C, needs to know which identifiers name types to parse unambiguously. A quick scan
over the preprocessed text finds every declared type name (header, struct, enum, typedef,
extern, parser, control, package ...) and every type parameter (`<T, O>`) with the span of the
declaration it belongs to; the lexer callbacks then turn IDENTIFIER tokens into
TYPE_IDENTIFIER, and a `<` that opens a type-argument list into L_ANGLE_T.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from lark import Token

_TOK = re.compile(r'"(?:\\.|[^"\\])*"|@[A-Za-z_]\w*|[A-Za-z_]\w*|\d\w*|\S')
_WORD = re.compile(r"\s*([A-Za-z_]\w*)")
TYPE_KEYWORDS = {"bit", "int", "varbit", "bool", "tuple", "string", "void", "error", "_"}
_BLOCK_KW = {"header", "header_union", "struct", "parser", "control", "package"}


class TypeNames:
    def __init__(self, text: str):
        self.text = text
        self.global_types: set[str] = set()
        self.scoped: list[tuple[int, int, str]] = []  # (start, end, name)
        self._scan()
        self._starts = sorted(self.scoped)
        self._keys = [s[0] for s in self._starts]

    def is_type(self, name: str, pos: int) -> bool:
        if name in self.global_types:
            return True
        i = bisect_right(self._keys, pos)
        return any(s <= pos < e and n == name for s, e, n in self._starts[:i])

    # lexer callbacks
    def on_identifier(self, tok: Token) -> Token:
        if self.is_type(tok.value, tok.start_pos or 0):
            tok.type = "TYPE_IDENTIFIER"
        return tok

    def on_lt(self, tok: Token) -> Token:
        m = _WORD.match(self.text, tok.end_pos or 0)
        if m and (m.group(1) in TYPE_KEYWORDS or self.is_type(m.group(1), m.start(1))):
            tok.type = "L_ANGLE_T"
        return tok

    # the scan
    def _scan(self) -> None:
        toks = [(m.group(0), m.start()) for m in _TOK.finditer(self.text)]
        n = len(toks)
        depth = 0
        decl_end = _decl_ends(toks)
        for i, (t, _) in enumerate(toks):
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
            if t in _BLOCK_KW and i + 1 < n and _is_ident(toks[i + 1][0]):
                self.global_types.add(toks[i + 1][0])
                self._type_params(toks, i + 2, decl_end[i])
            elif t == "enum" and i + 1 < n:
                j = i + 1
                if toks[j][0] in ("bit", "int"):
                    j += 4
                if j < n and _is_ident(toks[j][0]):
                    self.global_types.add(toks[j][0])
            elif t in ("typedef", "type") and depth == 0 and _statement_start(toks, i):
                j = i + 1
                while j < n and toks[j][0] != ";":
                    j += 1
                if _is_ident(toks[j - 1][0]):
                    self.global_types.add(toks[j - 1][0])
            elif t == "extern" and i + 2 < n:
                if toks[i + 2][0] in ("{", "<"):
                    self.global_types.add(toks[i + 1][0])
                    self._type_params(toks, i + 2, decl_end[i])
            elif (t == "<" and i > 0 and _is_ident(toks[i - 1][0])
                  and self._generic_proto(toks, i)):
                self._type_params(toks, i, decl_end[i])

    def _generic_proto(self, toks: list[tuple[str, int]], i: int) -> bool:
        """`name<T, U>(` in a function/method declaration (not a call with type arguments)."""
        j = i + 1
        names = []
        while j < len(toks) and _is_ident(toks[j][0]):
            names.append(toks[j][0])
            if toks[j + 1][0] == ",":
                j += 2
            else:
                j += 1
                break
        if not names or j >= len(toks) or toks[j][0] != ">" or toks[j + 1][0] != "(":
            return False
        # a declaration has a return type before the name: `T name<..>(` / `void name<..>(`
        prev = toks[i - 2][0] if i >= 2 else ""
        return (_is_ident(prev) or prev == ">") and prev != "return" and not any(
            n in self.global_types or n in TYPE_KEYWORDS for n in names)

    def _type_params(self, toks: list[tuple[str, int]], j: int, end: int) -> None:
        if j >= len(toks) or toks[j][0] != "<":
            return
        start = toks[j][1]
        j += 1
        while j < len(toks) and _is_ident(toks[j][0]):
            self.scoped.append((start, end, toks[j][0]))
            if toks[j + 1][0] != ",":
                break
            j += 2


def _is_ident(t: str) -> bool:
    return bool(t) and (t[0].isalpha() or t[0] == "_") and t not in ("_",)


def _statement_start(toks: list[tuple[str, int]], i: int) -> bool:
    return i == 0 or toks[i - 1][0] in (";", "}", "{") or toks[i - 1][0].startswith("@") or \
        toks[i - 1][0] == ")"


def _decl_ends(toks: list[tuple[str, int]]) -> list[int]:
    """For each token, the text offset where its top-level declaration ends."""
    ends = [0] * len(toks)
    depth = 0
    start = 0
    for i, (t, pos) in enumerate(toks):
        if t in "{(":
            depth += 1
        elif t in "})":
            depth -= 1
        if depth == 0 and (t == ";" or t == "}"):
            end = pos + 1
            for k in range(start, i + 1):
                ends[k] = end
            start = i + 1
    for k in range(start, len(toks)):
        ends[k] = 1 << 62
    return ends


class AngleSplitter:
    """Lark post-lexer: `>>` closes two type-argument lists (`register<bit<8>>`) and is a shift
    only outside them. Tracks the `<` that open type arguments (L_ANGLE_T, and `<` right after
    bit/int/varbit or a type name)."""

    always_accept = ()

    def process(self, stream):
        depth = 0
        prev = None
        for tok in stream:
            t = tok.type
            if t == "L_ANGLE_T" or (t == "LT" and prev in _TYPE_OPENERS):
                depth += 1
            elif t == "GT" and depth:
                depth -= 1
            elif t == "SHR" and depth:
                first = Token.new_borrow_pos("GT", ">", tok)
                second = Token("GT", ">", (tok.start_pos or 0) + 1, tok.line,
                               (tok.column or 0) + 1, tok.end_line, tok.end_column,
                               tok.end_pos)
                depth = max(depth - 2, 0)
                yield first
                prev = "GT"
                yield second
                continue
            prev = t
            yield tok


_TYPE_OPENERS = {"BIT", "INT_KW", "VARBIT", "TYPE_IDENTIFIER", "TUPLE", "VALUE_SET"}
