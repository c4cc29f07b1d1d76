"""Does a P4Info pushed by a controller describe the program it came with?

Compares what the server relies on (ids, names, match fields, parameters, controller headers)
with the P4Info generated from the program; documentation and package info may differ.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2

from p4switch.p4info.index import KINDS


def _summary(p4info: p4info_pb2.P4Info) -> dict[tuple[str, int], tuple]:
    out: dict[tuple[str, int], tuple] = {}
    for kind in KINDS:
        for obj in getattr(p4info, kind):
            detail: tuple = (obj.preamble.name,)
            if kind == "tables":
                detail += (tuple((m.id, m.name, m.bitwidth, m.match_type)
                                 for m in obj.match_fields),
                           tuple(a.id for a in obj.action_refs), obj.implementation_id)
            elif kind == "actions":
                detail += (tuple((p.id, p.name, p.bitwidth) for p in obj.params),)
            elif kind == "controller_packet_metadata":
                detail += (tuple((m.id, m.name, m.bitwidth) for m in obj.metadata),)
            out[kind, obj.preamble.id] = detail
    return out


def p4info_mismatch(pushed: p4info_pb2.P4Info, expected: p4info_pb2.P4Info) -> str | None:
    """None if they agree, else a message naming (up to 5 of) the differences."""
    a, b = _summary(pushed), _summary(expected)
    problems = []
    for key in sorted(set(a) | set(b)):
        kind = key[0][:-1].replace("_", " ")
        if key not in b:
            problems.append(f"{kind} {a[key][0]} (id {key[1]}) is not in the program")
        elif key not in a:
            problems.append(f"{kind} {b[key][0]} (id {key[1]}) is missing from the P4Info")
        elif a[key] != b[key]:
            problems.append(f"{kind} {b[key][0]} (id {key[1]}) differs from the program's")
    if not problems:
        return None
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return "P4Info does not match the device config: " + "; ".join(problems[:5]) + more
