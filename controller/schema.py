"""Name lookups in a P4Info and P4Runtime value encoding.

The controller never hard-codes ids: it finds tables, actions, match fields, parameters,
action profiles and counters by name in the P4Info the pipeline was built with. Names may be the
fully qualified p4c name (`FabricIngress.routing.ipv4_lpm`) or any alias P4Info lists.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from p4.config.v1 import p4info_pb2


class SchemaError(KeyError):
    """A name the P4Info does not have; the message lists what it does have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def _find(kind: str, items: Iterable, name: str):
    items = list(items)
    for item in items:
        if name in (item.preamble.name, item.preamble.alias):
            return item
    known = ", ".join(sorted(i.preamble.name for i in items)) or "none"
    raise SchemaError(f"the P4Info has no {kind} named {name!r} (it has: {known})")


class Schema:
    """Id and width lookups over one P4Info."""

    def __init__(self, p4info: p4info_pb2.P4Info):
        self.p4info = p4info
        self._by_id = {}
        for kind in ("tables", "actions", "action_profiles", "counters", "direct_counters",
                     "meters", "registers", "digests"):
            for item in getattr(p4info, kind):
                self._by_id[item.preamble.id] = item

    # ---- objects by name -----------------------------------------------------------------
    def table(self, name: str) -> p4info_pb2.Table:
        return _find("table", self.p4info.tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        return _find("action", self.p4info.actions, name)

    def action_profile(self, name: str) -> p4info_pb2.ActionProfile:
        return _find("action profile", self.p4info.action_profiles, name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return _find("counter", self.p4info.counters, name)

    def name_of(self, object_id: int) -> str:
        item = self._by_id.get(object_id)
        return item.preamble.name if item is not None else f"<id {object_id:#x}>"

    def profile_of(self, table_name: str) -> p4info_pb2.ActionProfile:
        """The action profile / selector implementing `table_name`."""
        table = self.table(table_name)
        if not table.implementation_id:
            raise SchemaError(f"table {table.preamble.name} has no action profile or selector")
        for profile in self.p4info.action_profiles:
            if profile.preamble.id == table.implementation_id:
                return profile
        raise SchemaError(f"table {table.preamble.name} names action profile "
                          f"{table.implementation_id:#x}, which the P4Info does not have")

    # ---- parts of objects ----------------------------------------------------------------
    def match_field(self, table_name: str, field: str) -> p4info_pb2.MatchField:
        table = self.table(table_name)
        for mf in table.match_fields:
            if mf.name == field:
                return mf
        known = ", ".join(mf.name for mf in table.match_fields) or "none"
        raise SchemaError(f"table {table.preamble.name} has no match field {field!r} "
                          f"(it has: {known})")

    def param(self, action_name: str, param: str) -> p4info_pb2.Action.Param:
        action = self.action(action_name)
        for p in action.params:
            if p.name == param:
                return p
        known = ", ".join(p.name for p in action.params) or "none"
        raise SchemaError(f"action {action.preamble.name} has no parameter {param!r} "
                          f"(it has: {known})")

    def field_name(self, table_id: int, field_id: int) -> str:
        table = self._by_id.get(table_id)
        for mf in getattr(table, "match_fields", ()):
            if mf.id == field_id:
                return mf.name
        return f"<field {field_id}>"


def encode(value: int, bitwidth: int, what: str = "value") -> bytes:
    """P4Runtime canonical bytes: big-endian, no leading zero bytes, at least one byte."""
    if value < 0 or value >= 1 << bitwidth:
        raise ValueError(f"{what} {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def canonical(data: bytes) -> bytes:
    """Strip leading zero bytes (keeping one), as a P4Runtime server returns values."""
    stripped = data.lstrip(b"\0")
    return stripped or b"\0"


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


def mac_to_int(mac: str) -> int:
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"not a MAC address: {mac!r}")
    return int("".join(parts), 16)


def ipv4_to_int(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))
