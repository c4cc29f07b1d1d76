"""The value of a preprocessor `#if` expression as a C preprocessor computes it: C's operators
and precedence on 64-bit signed integers (wrapping; a shift by 64 or more gives 0, or -1 for
a negative number shifted right). `defined` and macros are replaced before; an identifier
left is 0. Evaluated by precedence climbing over the tokens, never by `eval`.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\s*((?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uUlL]*|[A-Za-z_]\w*|&&|\|\||"
                    r"<<|>>|<=|>=|==|!=|\S)")
_MASK = (1 << 64) - 1
MAX_DEPTH = 32  # parentheses and unary operators


def _wrap(x: int) -> int:
    x &= _MASK
    return x - (1 << 64) if x >> 63 else x


def _div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("division by zero in #if")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _shl(a: int, b: int) -> int:
    return 0 if not 0 <= b < 64 else a << b


def _shr(a: int, b: int) -> int:
    return (-1 if a < 0 else 0) if not 0 <= b < 64 else a >> b


# binary operators by precedence, loosest first (C's table, without the comma)
_BINARY: list[dict] = [
    {"||": lambda a, b: int(bool(a) or bool(b))},
    {"&&": lambda a, b: int(bool(a) and bool(b))},
    {"|": lambda a, b: a | b},
    {"^": lambda a, b: a ^ b},
    {"&": lambda a, b: a & b},
    {"==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b)},
    {"<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
     "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b)},
    {"<<": _shl, ">>": _shr},
    {"+": lambda a, b: a + b, "-": lambda a, b: a - b},
    {"*": lambda a, b: a * b, "/": _div, "%": lambda a, b: a - _div(a, b) * b},
]
_UNARY = {"-": lambda x: -x, "+": lambda x: x, "~": lambda x: ~x, "!": lambda x: int(not x)}


def value(text: str) -> int:
    """The expression's value; ValueError (or ZeroDivisionError) when it is not one."""
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != re.sub(r"\s+", "", text):
        raise ValueError("unexpected characters")
    parser = _Parser(tokens)
    result = parser.conditional(0)
    if parser.pos != len(tokens):
        raise ValueError(f"unexpected {tokens[parser.pos]!r}")
    return result


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str) -> None:
        if self.peek() != expected:
            raise ValueError(f"expected {expected!r}")
        self.pos += 1

    def conditional(self, depth: int) -> int:
        cond = self.binary(0, depth)
        if self.peek() != "?":
            return cond
        self.pos += 1
        then = self.conditional(depth + 1)
        self.take(":")
        other = self.conditional(depth + 1)
        return then if cond else other

    def binary(self, level: int, depth: int) -> int:
        if level == len(_BINARY):
            return self.unary(depth)
        left = self.binary(level + 1, depth)
        while self.peek() in _BINARY[level]:
            op = _BINARY[level][self.tokens[self.pos]]
            self.pos += 1
            left = _wrap(op(left, self.binary(level + 1, depth)))
        return left

    def unary(self, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise ValueError("nested too deeply")
        tok = self.peek()
        if tok is None:
            raise ValueError("unexpected end")
        self.pos += 1
        if tok in _UNARY:
            return _wrap(_UNARY[tok](self.unary(depth + 1)))
        if tok == "(":
            inner = self.conditional(depth + 1)
            self.take(")")
            return inner
        if tok[0].isdigit():
            tok = tok.rstrip("uUlL")
            base = 16 if tok[:2] in ("0x", "0X") else 2 if tok[:2] in ("0b", "0B") else \
                8 if tok.startswith("0") and len(tok) > 1 else 10
            digits = tok[2:] if base in (16, 2) else tok
            if len(digits) > 64:
                raise ValueError(f"number too long: {tok[:20]}...")
            return _wrap(int(digits, base))
        if tok[0].isalpha() or tok[0] == "_":
            return 0
        raise ValueError(f"unexpected {tok!r}")
