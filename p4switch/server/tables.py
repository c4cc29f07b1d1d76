"""Table entries: P4Runtime TableEntry messages <-> runtime `Entry` objects.

Ids are resolved through the P4Info; byte strings follow PI's rules (`bytestrings`); the
semantic checks (prefix/host bits, masks, ranges, priorities, action scopes, const tables,
capacity) are the runtime tables' own, which raise the codes PI uses.
"""

from __future__ import annotations

from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.p4info.index import P4InfoIndex
from p4switch.runtime.entries import Entry, GroupRef, MemberRef, OneShot, OneShotAction
from p4switch.runtime.errors import RuntimeApiError, invalid, invalid_id, unimplemented
from p4switch.server.bytestrings import to_bytes, to_int

Update = p4runtime_pb2.Update
_KIND_OF = {
    p4info_pb2.MatchField.EXACT: "exact",
    p4info_pb2.MatchField.LPM: "lpm",
    p4info_pb2.MatchField.TERNARY: "ternary",
    p4info_pb2.MatchField.RANGE: "range",
    p4info_pb2.MatchField.OPTIONAL: "optional",
}


class ActionCodec:
    """Actions and their parameters (shared with action profile members)."""

    def __init__(self, index: P4InfoIndex):
        self.index = index

    def decode(self, msg: p4runtime_pb2.Action) -> ActionCall:
        if self.index.kind(msg.action_id) != "actions":
            raise invalid_id("action", msg.action_id)
        action = self.index.get(msg.action_id)
        values: dict[int, int] = {}
        widths = {p.id: p for p in action.params}
        for param in msg.params:
            info = widths.get(param.param_id)
            if info is None:
                raise invalid(f"action {action.preamble.name} has no parameter id "
                              f"{param.param_id}")
            if param.param_id in values:
                raise invalid(f"action {action.preamble.name}: parameter {info.name} given twice")
            values[param.param_id] = to_int(param.value, info.bitwidth,
                                            f"parameter {info.name} of {action.preamble.name}")
        if len(values) != len(action.params):
            missing = [p.name for p in action.params if p.id not in values]
            raise invalid(f"action {action.preamble.name}: missing parameter(s) "
                          f"{', '.join(missing)}")
        return ActionCall(action.preamble.name, tuple(values[p.id] for p in action.params))

    def encode(self, call: ActionCall, out: p4runtime_pb2.Action) -> None:
        action = self.index.action(call.action)
        out.action_id = action.preamble.id
        for p, value in zip(action.params, call.args, strict=False):
            out.params.add(param_id=p.id, value=to_bytes(value))


def port_from_bytes(data: bytes) -> int:
    return int.from_bytes(data, "big")


class TableCodec:
    def __init__(self, index: P4InfoIndex, state: Any, actions: ActionCodec):
        self.index = index
        self.state = state
        self.actions = actions

    # -- helpers ---------------------------------------------------------------------------
    def _table(self, table_id: int) -> tuple[p4info_pb2.Table, Any]:
        if self.index.kind(table_id) != "tables":
            raise invalid_id("table", table_id)
        info = self.index.get(table_id)
        return info, self.state.tables[info.preamble.name]

    def decode_key(self, info: p4info_pb2.Table, msg: p4runtime_pb2.TableEntry
                   ) -> tuple[FieldMatch | None, ...]:
        fields = list(info.match_fields)
        by_id = {mf.id: i for i, mf in enumerate(fields)}
        keys: list[FieldMatch | None] = [None] * len(fields)
        for fm in msg.match:
            i = by_id.get(fm.field_id)
            if i is None:
                raise invalid(f"table {info.preamble.name} has no match field id {fm.field_id}")
            if keys[i] is not None:
                raise invalid(f"match field {fields[i].name} given twice")
            keys[i] = self._field(fields[i], fm)
        return tuple(keys)

    @staticmethod
    def _field(mf: p4info_pb2.MatchField, fm: p4runtime_pb2.FieldMatch) -> FieldMatch:
        which = fm.WhichOneof("field_match_type")
        expected = _KIND_OF.get(mf.match_type)
        if which != expected:
            raise invalid(f"invalid match type for field {mf.name}: {which}, the table "
                          f"expects {expected}")
        w, what = mf.bitwidth, f"match field {mf.name}"
        if which == "exact":
            return FieldMatch("exact", value=to_int(fm.exact.value, w, what))
        if which == "optional":
            return FieldMatch("optional", value=to_int(fm.optional.value, w, what))
        if which == "lpm":
            return FieldMatch("lpm", value=to_int(fm.lpm.value, w, what),
                              prefix_len=fm.lpm.prefix_len)
        if which == "ternary":
            return FieldMatch("ternary", value=to_int(fm.ternary.value, w, what),
                              mask=to_int(fm.ternary.mask, w, what + " mask"))
        return FieldMatch("range", low=to_int(fm.range.low, w, what + " low"),
                          high=to_int(fm.range.high, w, what + " high"))

    def decode_action(self, msg: p4runtime_pb2.TableAction):
        which = msg.WhichOneof("type")
        if which == "action":
            return self.actions.decode(msg.action)
        if which == "action_profile_member_id":
            return MemberRef(msg.action_profile_member_id)
        if which == "action_profile_group_id":
            return GroupRef(msg.action_profile_group_id)
        if which == "action_profile_action_set":
            return OneShot(tuple(
                OneShotAction(self.actions.decode(a.action), a.weight, watch_port(a))
                for a in msg.action_profile_action_set.action_profile_actions))
        raise invalid("the table entry has no action")

    # -- write -----------------------------------------------------------------------------
    def write(self, kind: int, msg: p4runtime_pb2.TableEntry) -> None:
        info, table = self._table(msg.table_id)
        if msg.HasField("time_since_last_hit"):
            raise invalid("has_time_since_last_hit must not be set in WriteRequest")
        if kind == Update.UNSPECIFIED:
            raise invalid("Update type is not set")
        if msg.is_default_action:
            self._write_default(kind, info, table, msg)
            return
        if not info.match_fields:
            raise invalid(f"table {info.preamble.name} has no match key: its only entry is the "
                          "default entry (MODIFY with is_default_action)")
        keys = self.decode_key(info, msg)
        if kind != Update.DELETE:
            self._check_direct_resources(info, msg)
        if kind == Update.DELETE:
            table.delete(keys, msg.priority)
            return
        entry = Entry(keys=keys, priority=msg.priority,
                      action=self.decode_action(msg.action) if msg.HasField("action") else None,
                      controller_metadata=msg.controller_metadata, metadata=msg.metadata,
                      idle_timeout_ns=msg.idle_timeout_ns)
        if msg.HasField("meter_config"):
            entry.meter_config = meter_config(msg.meter_config)
        if kind == Update.INSERT:
            table.insert(entry)
            if msg.HasField("counter_data"):
                stored = table.get(entry.keys, entry.priority)
                stored.direct_counter[:] = [msg.counter_data.packet_count,
                                            msg.counter_data.byte_count]
        elif kind == Update.MODIFY:
            table.modify(entry)
            if msg.HasField("counter_data"):
                stored = table.get(keys, msg.priority)
                stored.direct_counter[:] = [msg.counter_data.packet_count,
                                            msg.counter_data.byte_count]
        else:
            raise invalid(f"Invalid update type {kind}")

    def _check_direct_resources(self, info: p4info_pb2.Table,
                                msg: p4runtime_pb2.TableEntry) -> None:
        """counter_data, meter_config and idle_timeout_ns only where the table has them."""
        name = info.preamble.name
        if msg.HasField("counter_data") and not self._has_direct(info, "direct_counters"):
            raise invalid(f"table {name} has no direct counter: counter_data must be unset")
        if msg.HasField("meter_config") and not self._has_direct(info, "direct_meters"):
            raise invalid(f"table {name} has no direct meter: meter_config must be unset")
        if msg.idle_timeout_ns < 0:
            raise invalid("idle_timeout_ns must be a positive value")
        if msg.idle_timeout_ns:
            if info.idle_timeout_behavior != p4info_pb2.Table.NOTIFY_CONTROL:
                raise invalid(f"table {name} does not support idle timeout: idle_timeout_ns "
                              "must be 0")
            raise unimplemented("idle timeout notifications are not supported by p4switch "
                                f"(table {name}: idle_timeout_ns must be 0)")

    def _has_direct(self, info: p4info_pb2.Table, kind: str) -> bool:
        return any(self.index.kind(rid) == kind for rid in info.direct_resource_ids)

    def _write_default(self, kind: int, info, table, msg: p4runtime_pb2.TableEntry) -> None:
        if kind != Update.MODIFY:
            raise invalid(f"the default entry of {info.preamble.name} can only be MODIFY'd")
        if msg.match or msg.priority:
            raise invalid("a default entry has no match key and no priority")
        if not msg.HasField("action"):
            table.reset_default()
            return
        action = self.decode_action(msg.action)
        table.set_default(action)

    # -- read ------------------------------------------------------------------------------
    def read(self, msg: p4runtime_pb2.TableEntry) -> list[p4runtime_pb2.Entity]:
        if msg.table_id == 0:
            infos = list(self.index.p4info.tables)
        else:
            infos = [self._table(msg.table_id)[0]]
        out = []
        for info in infos:
            table = self.state.tables[info.preamble.name]
            if msg.is_default_action:
                out.append(self._entity(info, table.default_entry, msg, default=True))
                continue
            if msg.match:
                try:
                    entries = [table.get(self.decode_key(info, msg), msg.priority)]
                except RuntimeApiError as exc:
                    if exc.code == "NOT_FOUND":
                        continue
                    raise
            else:
                entries = table.entries()
            out.extend(self._entity(info, e, msg) for e in entries)
        return out

    def _entity(self, info, entry: Entry, request: p4runtime_pb2.TableEntry,
                default: bool = False) -> p4runtime_pb2.Entity:
        ent = p4runtime_pb2.Entity()
        te = ent.table_entry
        te.table_id = info.preamble.id
        if default:
            te.is_default_action = True
        for mf, fm in zip(info.match_fields, entry.keys, strict=False):
            if fm is None:
                continue
            out = te.match.add(field_id=mf.id)
            if fm.kind == "exact":
                out.exact.value = _field_bytes(fm.value)
            elif fm.kind == "optional":
                out.optional.value = _field_bytes(fm.value)
            elif fm.kind == "lpm":
                out.lpm.value = _field_bytes(fm.value)
                out.lpm.prefix_len = fm.prefix_len
            elif fm.kind == "ternary":
                out.ternary.value = _field_bytes(fm.value)
                out.ternary.mask = _field_bytes(fm.mask)
            else:
                out.range.low = _field_bytes(fm.low)
                out.range.high = _field_bytes(fm.high)
        te.priority = entry.priority
        self._encode_action(entry.action, te.action)
        te.controller_metadata = entry.controller_metadata
        te.metadata = entry.metadata
        te.idle_timeout_ns = entry.idle_timeout_ns
        te.is_const = entry.is_const
        if request.HasField("counter_data") and info.direct_resource_ids and not default:
            te.counter_data.packet_count, te.counter_data.byte_count = entry.direct_counter
        if request.HasField("meter_config") and entry.meter_config is not None:
            c = entry.meter_config
            te.meter_config.cir, te.meter_config.cburst = c.cir, c.cburst
            te.meter_config.pir, te.meter_config.pburst = c.pir, c.pburst
        return ent

    def _encode_action(self, action, out: p4runtime_pb2.TableAction) -> None:
        if isinstance(action, ActionCall):
            self.actions.encode(action, out.action)
        elif isinstance(action, MemberRef):
            out.action_profile_member_id = action.member_id
        elif isinstance(action, GroupRef):
            out.action_profile_group_id = action.group_id
        elif isinstance(action, OneShot):
            aset = out.action_profile_action_set
            for a in action.actions:
                pa = aset.action_profile_actions.add(weight=a.weight)
                self.actions.encode(a.action, pa.action)
                if a.watch_port is not None:
                    pa.watch_port = to_bytes(a.watch_port)


def watch_port(msg: p4runtime_pb2.ActionProfileAction | Any) -> int | None:
    which = msg.WhichOneof("watch_kind")
    if which == "watch_port":
        return port_from_bytes(msg.watch_port)
    if which == "watch":
        return msg.watch
    return None


def meter_config(msg: p4runtime_pb2.MeterConfig):
    from p4switch.runtime.meters import MeterConfig

    return MeterConfig(cir=msg.cir, cburst=msg.cburst, pir=msg.pir, pburst=msg.pburst)


def _field_bytes(value: int | None) -> bytes:
    """A part of an entry's key field that its match kind has (never None)."""
    assert value is not None
    return to_bytes(value)
