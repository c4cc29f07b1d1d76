"""Differences between two P4Info messages, object by object, for checking against p4c's output.

The comparison is exact: p4c's order of the objects of each kind is defined (the order it
meets them in the program), so an object in another place is a difference like any other.
Only the maps of `type_info` have no order (protobuf map equality, sorted keys in text).
"""

from __future__ import annotations

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.p4info.index import KINDS


def diff_p4info(expected: p4info_pb2.P4Info, got: p4info_pb2.P4Info) -> list[str]:
    """One line per difference; empty exactly when the two messages are equal."""
    problems: list[str] = []
    if expected.pkg_info != got.pkg_info:
        problems.append(f"pkg_info: expected {_short(expected.pkg_info)}, got {_short(got.pkg_info)}")
    for kind in KINDS:
        want = {o.preamble.name: o for o in getattr(expected, kind)}
        have = {o.preamble.name: o for o in getattr(got, kind)}
        for name in want.keys() - have.keys():
            problems.append(f"{kind}: missing {name}")
        for name in have.keys() - want.keys():
            problems.append(f"{kind}: unexpected {name}")
        for name in sorted(want.keys() & have.keys()):
            if want[name] != have[name]:
                problems.append(f"{kind} {name}: {_first_difference(want[name], have[name])}")
        order_want = [n for n in _names(expected, kind) if n in have]
        order_have = [n for n in _names(got, kind) if n in want]
        if order_want != order_have:
            i = next(i for i, (a, b) in enumerate(zip(order_want, order_have, strict=False)) if a != b)
            problems.append(f"{kind}: order: expected {order_want[i]} at {i}, got {order_have[i]}")
    if expected.HasField("type_info") != got.HasField("type_info"):
        problems.append(
            f"type_info: expected {'one' if expected.HasField('type_info') else 'none'}, "
            f"got {'one' if got.HasField('type_info') else 'none'}"
        )
    elif expected.type_info != got.type_info:
        problems.append(f"type_info: {_first_difference(expected.type_info, got.type_info)}")
    if not problems and expected != got:  # a field no kind above covers (externs, ...)
        problems.append(f"P4Info: {_first_difference(expected, got)}")
    return problems


def same_order(expected: p4info_pb2.P4Info, got: p4info_pb2.P4Info) -> bool:
    return all(_names(expected, kind) == _names(got, kind) for kind in KINDS)


def _names(p4info: p4info_pb2.P4Info, kind: str) -> list[str]:
    return [o.preamble.name for o in getattr(p4info, kind)]


def _short(message) -> str:
    return text_format.MessageToString(message, as_one_line=True) or "{}"


def _first_difference(want, have) -> str:
    a = text_format.MessageToString(want).splitlines()
    b = text_format.MessageToString(have).splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"line {i + 1}: expected {x.strip()!r}, got {y.strip()!r}"
    if len(a) > len(b):
        return f"missing {a[len(b)].strip()!r}"
    return f"unexpected {b[len(a)].strip()!r}"
