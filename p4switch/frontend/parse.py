"""Source text -> syntax tree (`ast.Program`), with positions in the original files."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from . import ast_decl as D
from .build import Builder
from .diagnostics import Reporter
from .lexer import AngleSplitter, TypeNames
from .nesting import position, too_deep
from .preprocess import Preprocessed
from .source import MAX_SOURCE_BYTES

GRAMMAR = Path(__file__).with_name("p4.lark")

_LOCK = threading.Lock()  # the lexer callbacks are per parse; one parse at a time


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR.read_text(), parser="lalr", lexer="basic", propagate_positions=True,
                maybe_placeholders=True, postlex=AngleSplitter(), cache=True)


def parse(pre: Preprocessed, reporter: Reporter) -> D.Program | None:
    """Parse preprocessed text; syntax errors go to `reporter` (and None is returned), as do
    a text past `MAX_SOURCE_BYTES` (a device config's) and nesting past the limits of
    `nesting` (checked before anything recurses into the tree)."""
    if len(pre.text) - pre.text.count("\n") > MAX_SOURCE_BYTES:
        reporter.error(pre.pos(0, 0), f"the program is larger than {MAX_SOURCE_BYTES // 1024} "
                                      "KiB after preprocessing")
        return None
    if not pre.text.strip():
        reporter.error(pre.pos(0, 0), "empty program: nothing but white space and comments")
        return None
    names = TypeNames(pre.text)
    parser = _parser()
    with _LOCK:
        lexer = parser.parser.lexer
        _install_callbacks(lexer, {"IDENTIFIER": names.on_identifier, "LT": names.on_lt})
        try:
            tree = parser.parse(pre.text)
        except UnexpectedInput as e:
            reporter.error(pre.pos(e.line, e.column), _syntax_message(e))
            return None
        finally:
            _install_callbacks(lexer, {})
    deep = too_deep(tree)
    if deep is not None:
        node, message = deep
        reporter.error(pre.pos(*position(node)), message)
        return None
    return Builder(pre, reporter).transform(tree)


def _install_callbacks(lexer, callbacks: dict) -> None:
    """Install IDENTIFIER/LT callbacks on lark's basic lexer (chained after keyword retyping)."""
    inner = getattr(lexer, "lexer", lexer)  # PostLexConnector / BasicLexer
    if not hasattr(inner, "_p4_base_callback"):
        inner._build_scanner() if getattr(inner, "_scanner", None) is None else None
        inner._p4_base_callback = dict(inner.callback)
    cb = dict(inner._p4_base_callback)
    for name, fn in callbacks.items():
        base = cb.get(name)
        if base is None:
            cb[name] = fn
        else:
            cb[name] = _chain(base, fn, name)
    inner.callback = cb


def _chain(first, second, name):
    def call(tok):
        tok = first(tok)
        return second(tok) if tok.type == name else tok

    return call


def _syntax_message(e: UnexpectedInput) -> str:
    if isinstance(e, UnexpectedCharacters):
        return f"syntax error: unexpected character {e.char!r}"
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            return "syntax error: unexpected end of input"
        return f"syntax error: unexpected {tok.value!r}"
    return "syntax error"


