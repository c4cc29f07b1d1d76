"""Compile-time evaluation: literal folding with P4's wrap-around semantics."""

from __future__ import annotations

from .types import Bits, BoolType, EnumType, IntLit, P4Type


def wrap(value: int, t: P4Type) -> int:
    """`value` as a value of type t (two's complement for int<W>)."""
    if isinstance(t, Bits):
        v = value & t.mask
        if t.signed and t.width and v >> (t.width - 1):
            v -= 1 << t.width
        return v
    return value


def fold_binary(op: str, a, b, t: P4Type, operand_type: P4Type):
    """Fold `a op b`; t is the result type, operand_type the (common) operand type.

    Returns None when the operation cannot be folded (e.g. division by zero)."""
    if op == "&&":
        return bool(a and b)
    if op == "||":
        return bool(a or b)
    if op in ("==", "!="):
        return (a == b) == (op == "==")
    if op in ("<", ">", "<=", ">="):
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    if isinstance(t, BoolType):
        return None
    if op == "++":
        bt = operand_type
        assert isinstance(t, Bits) and isinstance(bt, Bits)
        return wrap(((a & ((1 << (t.width - bt.width)) - 1)) << bt.width) | (b & bt.mask), t)
    if op in ("/", "%"):
        if b == 0 or (isinstance(t, IntLit) and (a < 0 or b < 0)):
            return None
        return wrap(a // b if op == "/" else a % b, t)
    if op == "<<":
        if isinstance(t, Bits) and b >= t.width:
            return 0
        return wrap(a << b, t)
    if op == ">>":
        if isinstance(t, Bits) and not t.signed and b >= t.width:
            return 0
        return wrap(a >> b, t)
    if op in ("|+|", "|-|"):
        r = a + b if op == "|+|" else a - b
        if isinstance(t, Bits):
            lo, hi = ((-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed
                      else (0, t.mask))
            return min(max(r, lo), hi)
        return r
    r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "&": lambda: a & b,
         "|": lambda: a | b, "^": lambda: a ^ b}[op]()
    return wrap(r, t)


def fold_unary(op: str, a, t: P4Type):
    if op == "!":
        return not a
    if op == "~":
        return wrap(~a, t) if isinstance(t, Bits) else None
    if op == "-":
        return wrap(-a, t)
    return a


def fold_cast(value, src: P4Type, dst: P4Type):
    if isinstance(dst, BoolType):
        return bool(value)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(dst, Bits):
        return wrap(value, dst)
    if isinstance(dst, EnumType) and dst.width is not None:
        return value & ((1 << dst.width) - 1)  # an enum holds its bits, as EnumType.value
    return value
