"""The value of a preprocessor `#if` expression, as a C preprocessor computes it: 64-bit
signed integers (wrapping), `&&`, `||`, `!`, comparisons, arithmetic and bit operators.

`value(text)` takes the expression already in Python's spelling (`and`, `or`, `not`; the
preprocessor translates the tokens) and evaluates its syntax tree: never `eval`, so a
shift by 10**12 is 0, not a number of a terabyte.
"""

from __future__ import annotations

import ast
import operator

_MASK = (1 << 64) - 1


def _wrap(x: int) -> int:
    x &= _MASK
    return x - (1 << 64) if x >> 63 else x


def _div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("division by zero")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _mod(a: int, b: int) -> int:
    return a - _div(a, b) * b


def _shl(a: int, b: int) -> int:
    return 0 if b >= 64 or b < 0 else a << b


def _shr(a: int, b: int) -> int:
    return (-1 if a < 0 else 0) if b >= 64 or b < 0 else a >> b


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: _div, ast.FloorDiv: _div, ast.Mod: _mod, ast.LShift: _shl,
           ast.RShift: _shr, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
          ast.Not: lambda x: int(not x)}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


def value(text: str) -> int:
    """The expression's value; ValueError (or SyntaxError, ZeroDivisionError) when it is not
    one."""
    return _value(ast.parse(text, mode="eval").body)


def _value(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return _wrap(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _wrap(_BINARY[type(node.op)](_value(node.left), _value(node.right)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _wrap(_UNARY[type(node.op)](_value(node.operand)))
    if isinstance(node, ast.BoolOp):
        values = (_value(v) for v in node.values)
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare):
        left = _value(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _value(right_node)
            if type(op) not in _COMPARE or not _COMPARE[type(op)](left, right):
                return 0
            left = right
        return 1
    raise ValueError(f"not a preprocessor expression: {ast.dump(node)[:60]}")
