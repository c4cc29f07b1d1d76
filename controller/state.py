"""Device state as comparable values, and the updates that turn one state into another.

A `DeviceState` holds the entities the controller owns on one switch in a normalised form
(ids and canonical byte strings in tuples), so the state read back from a device compares equal to
the state computed from the fabric when, and only when, nothing needs writing. `plan_updates()`
gives the write batches, in an order that never leaves a reference dangling: members, groups,
entries (insert/modify), then deletions the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from p4.v1 import p4runtime_pb2

from controller.schema import canonical

Update: TypeAlias = p4runtime_pb2.Update
Params = tuple[tuple[int, bytes], ...]            # (param id, canonical value)
Action = tuple                                    # ("action", id, Params) | ("member", id) | ("group", id)
Match = tuple[tuple, ...]                         # ((field id, kind, canonical parts...), ...)
EntryKey = tuple[int, Match, int]                 # (table id, match, priority)
GroupValue = tuple[tuple[int, int, bytes], ...]   # sorted (member id, weight, watch port)


@dataclass
class DeviceState:
    """What the controller owns on one device, normalised."""

    members: dict[tuple[int, int], tuple[int, Params]] = field(default_factory=dict)
    groups: dict[tuple[int, int], GroupValue] = field(default_factory=dict)
    group_sizes: dict[tuple[int, int], int] = field(default_factory=dict)  # max_size to write
    entries: dict[EntryKey, Action] = field(default_factory=dict)
    defaults: dict[int, Action] = field(default_factory=dict)  # table id -> default action

    def count(self) -> int:
        return len(self.members) + len(self.groups) + len(self.entries) + len(self.defaults)


# ---- protobuf -> normalised ------------------------------------------------------------------
def _params(action: p4runtime_pb2.Action) -> Params:
    return tuple(sorted((p.param_id, canonical(p.value)) for p in action.params))


def _match(entry: p4runtime_pb2.TableEntry) -> Match:
    out = []
    for fm in entry.match:
        kind = fm.WhichOneof("field_match_type")
        part = getattr(fm, kind)
        parts: tuple[Any, ...]
        if kind == "lpm":
            parts = (canonical(part.value), part.prefix_len)
        elif kind == "ternary":
            parts = (canonical(part.value), canonical(part.mask))
        elif kind == "range":
            parts = (canonical(part.low), canonical(part.high))
        else:  # exact, optional
            parts = (canonical(part.value),)
        out.append((fm.field_id, kind, *parts))
    return tuple(sorted(out))


def _watch(member: p4runtime_pb2.ActionProfileGroup.Member) -> bytes:
    """The watched port as canonical bytes (servers may answer with the deprecated int32)."""
    kind = member.WhichOneof("watch_kind")
    if kind == "watch_port":
        return canonical(member.watch_port)
    if kind == "watch":
        return canonical(member.watch.to_bytes(4, "big"))
    return b""


def _table_action(entry: p4runtime_pb2.TableEntry) -> Action:
    kind = entry.action.WhichOneof("type")
    if kind == "action":
        return ("action", entry.action.action.action_id, _params(entry.action.action))
    if kind == "action_profile_member_id":
        return ("member", entry.action.action_profile_member_id)
    if kind == "action_profile_group_id":
        return ("group", entry.action.action_profile_group_id)
    return ("unsupported", kind)


def add_read_entities(state: DeviceState, entities: Iterable[p4runtime_pb2.Entity]) -> DeviceState:
    """Fold entities read from a device into `state` (counter data and the like are ignored)."""
    for entity in entities:
        kind = entity.WhichOneof("entity")
        if kind == "action_profile_member":
            m = entity.action_profile_member
            state.members[(m.action_profile_id, m.member_id)] = (m.action.action_id,
                                                                 _params(m.action))
        elif kind == "action_profile_group":
            g = entity.action_profile_group
            key = (g.action_profile_id, g.group_id)
            state.groups[key] = tuple(sorted(
                (m.member_id, m.weight, _watch(m)) for m in g.members))
            state.group_sizes[key] = g.max_size
        elif kind == "table_entry":
            e = entity.table_entry
            if e.is_default_action:
                state.defaults[e.table_id] = _table_action(e)
            else:
                state.entries[(e.table_id, _match(e), e.priority)] = _table_action(e)
    return state


# ---- normalised -> protobuf ------------------------------------------------------------------
def _set_action(msg: p4runtime_pb2.Action, action_id: int, params: Params) -> None:
    msg.action_id = action_id
    for param_id, value in params:
        msg.params.add(param_id=param_id, value=value)


def _set_table_action(entry: p4runtime_pb2.TableEntry, action: Action) -> None:
    if action[0] == "action":
        _set_action(entry.action.action, action[1], action[2])
    elif action[0] == "member":
        entry.action.action_profile_member_id = action[1]
    elif action[0] == "group":
        entry.action.action_profile_group_id = action[1]
    else:
        raise ValueError(f"cannot write table action {action!r}")


def member_entity(key: tuple[int, int], value: tuple[int, Params]) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    m = entity.action_profile_member
    m.action_profile_id, m.member_id = key
    _set_action(m.action, *value)
    return entity


def group_entity(key: tuple[int, int], value: GroupValue, max_size: int = 0
                 ) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    g = entity.action_profile_group
    g.action_profile_id, g.group_id = key
    g.max_size = max_size
    for member_id, weight, watch_port in value:
        member = g.members.add(member_id=member_id, weight=weight)
        if watch_port:
            member.watch_port = watch_port
    return entity


def entry_entity(key: EntryKey, action: Action | None) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    e = entity.table_entry
    e.table_id, match, e.priority = key
    for field_id, kind, *parts in match:
        fm = e.match.add(field_id=field_id)
        if kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = parts
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = parts
        elif kind == "range":
            fm.range.low, fm.range.high = parts
        else:
            getattr(fm, kind).value = parts[0]
    if action is not None:
        _set_table_action(e, action)
    return entity


def default_entity(table_id: int, action: Action) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = table_id
    entity.table_entry.is_default_action = True
    _set_table_action(entity.table_entry, action)
    return entity


# ---- the difference --------------------------------------------------------------------------
def _update(kind: int, entity: p4runtime_pb2.Entity) -> Update:
    update = Update(type=kind)
    update.entity.CopyFrom(entity)
    return update


def _changes(want: dict, have: dict) -> tuple[list, list, list]:
    inserts = [k for k in want if k not in have]
    modifies = [k for k in want if k in have and have[k] != want[k]]
    deletes = [k for k in have if k not in want]
    return inserts, modifies, deletes


def plan_updates(want: DeviceState, have: DeviceState) -> list[list[Update]]:
    """Write batches turning `have` into `want`; empty batches are left out."""
    ins, mod, dele = Update.INSERT, Update.MODIFY, Update.DELETE
    m_ins, m_mod, m_del = _changes(want.members, have.members)
    g_ins, g_mod, g_del = _changes(want.groups, have.groups)
    e_ins, e_mod, e_del = _changes(want.entries, have.entries)
    d_mod = [t for t in want.defaults if have.defaults.get(t) != want.defaults[t]]

    def group(k, kind):
        return _update(kind, group_entity(k, want.groups[k], want.group_sizes.get(k, 0)))

    batches = [
        [_update(ins, member_entity(k, want.members[k])) for k in m_ins]
        + [_update(mod, member_entity(k, want.members[k])) for k in m_mod],
        [group(k, ins) for k in g_ins] + [group(k, mod) for k in g_mod],
        [_update(ins, entry_entity(k, want.entries[k])) for k in e_ins]
        + [_update(mod, entry_entity(k, want.entries[k])) for k in e_mod]
        + [_update(mod, default_entity(t, want.defaults[t])) for t in d_mod],
        [_update(dele, entry_entity(k, None)) for k in e_del],
        [_update(dele, group_entity(k, ())) for k in g_del],
        [_update(dele, member_entity(k, (have.members[k][0], ()))) for k in m_del],
    ]
    return [batch for batch in batches if batch]
