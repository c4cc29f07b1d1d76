"""Id <-> name lookups over a P4Info message, for the P4Runtime server and the tools.

Kinds are the P4Info field names: "tables", "actions", "action_profiles", "counters",
"direct_counters", "meters", "direct_meters", "registers", "digests",
"controller_packet_metadata", "value_sets". Names may be given fully qualified or by alias.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2

KINDS = (
    "tables",
    "actions",
    "action_profiles",
    "counters",
    "direct_counters",
    "meters",
    "direct_meters",
    "controller_packet_metadata",
    "value_sets",
    "registers",
    "digests",
)


class P4InfoIndex:
    """Every named P4Info object by id, and by (kind, name or alias)."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_id: dict[int, tuple[str, object]] = {}
        self._by_name: dict[tuple[str, str], object] = {}
        for kind in KINDS:
            for obj in getattr(p4info, kind):
                pre = obj.preamble
                self._by_id[pre.id] = (kind, obj)
                self._by_name[kind, pre.name] = obj
                if pre.alias:
                    self._by_name.setdefault((kind, pre.alias), obj)

    def get(self, id_: int):
        """The object with this id (a Table, Action, ... message), or None."""
        found = self._by_id.get(id_)
        return found[1] if found else None

    def kind(self, id_: int) -> str | None:
        found = self._by_id.get(id_)
        return found[0] if found else None

    def name(self, id_: int) -> str:
        obj = self.get(id_)
        if obj is None:
            raise KeyError(f"no P4Info object with id {id_}")
        return obj.preamble.name

    def find(self, kind: str, name: str):
        """The object of this kind named `name` (fully qualified or alias), or None."""
        if kind not in KINDS:
            raise ValueError(f"unknown P4Info kind {kind!r}")
        return self._by_name.get((kind, name))

    def id(self, kind: str, name: str) -> int:
        obj = self.find(kind, name)
        if obj is None:
            raise KeyError(f"no {kind[:-1].replace('_', ' ')} named {name!r} in the P4Info")
        return obj.preamble.id

    def table(self, key: int | str) -> p4info_pb2.Table:
        return self._typed("tables", key)

    def action(self, key: int | str) -> p4info_pb2.Action:
        return self._typed("actions", key)

    def match_field(self, table: int | str, field: int | str) -> p4info_pb2.MatchField:
        t = self.table(table)
        for mf in t.match_fields:
            if mf.id == field or mf.name == field:
                return mf
        raise KeyError(f"table {t.preamble.name} has no match field {field!r}")

    def param(self, action: int | str, param: int | str) -> p4info_pb2.Action.Param:
        a = self.action(action)
        for p in a.params:
            if p.id == param or p.name == param:
                return p
        raise KeyError(f"action {a.preamble.name} has no parameter {param!r}")

    def _typed(self, kind: str, key: int | str):
        obj = self.find(kind, key) if isinstance(key, str) else self.get(key)
        if obj is None or (isinstance(key, int) and self.kind(key) != kind):
            raise KeyError(f"no {kind[:-1].replace('_', ' ')} {key!r} in the P4Info")
        return obj
