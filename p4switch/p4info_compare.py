"""Differences between two P4Info messages, object by object, for checking against p4c's output."""

from __future__ import annotations

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.p4info_index import KINDS


def diff_p4info(expected: p4info_pb2.P4Info, got: p4info_pb2.P4Info) -> list[str]:
    """One line per difference; empty when equal apart from the order of repeated objects."""
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
    if expected.type_info != got.type_info:
        problems.append(f"type_info: {_first_difference(expected.type_info, got.type_info)}")
    return problems


def same_order(expected: p4info_pb2.P4Info, got: p4info_pb2.P4Info) -> bool:
    return all(
        [o.preamble.name for o in getattr(expected, kind)]
        == [o.preamble.name for o in getattr(got, kind)]
        for kind in KINDS
    )


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
