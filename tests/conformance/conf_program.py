"""Entities of conformance.p4 (programs/conformance.p4) the tests write."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2 as pb

from p4switch.p4info.index import P4InfoIndex


def fwd_entry(index: P4InfoIndex, port: int, out: int = 1, *, action: str = "forward"
              ) -> pb.TableEntry:
    """An entry of table `fwd`: ingress `port` -> `action` (`out`)."""
    te = pb.TableEntry(table_id=index.id("tables", "ConfIngress.fwd"))
    te.match.add(field_id=1).exact.value = port.to_bytes(2, "big")
    te.action.action.action_id = index.id("actions", f"ConfIngress.{action}")
    if action == "forward":
        te.action.action.params.add(param_id=1, value=out.to_bytes(2, "big"))
    return te
