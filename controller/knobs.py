"""A mechanism's knobs (`mechanisms.Knob`) over P4Runtime: the entities a setting writes, what a
switch holds, and writing only the differences (read back, `controller.state.plan_updates`).

    rows = [([(20, 100)], {"threshold": 0xFFFF})]        # (match values in the knob's order, params)
    set_knob(ctl, ecn.MECHANISM.knob("ecn_threshold"), rows, priority=1)   # every switch
    set_knob(ctl, flowlet.MECHANISM.knob("flowlet_gap"), default={"gap": 20_000})
    knob_values(ctl.clients["leaf0"], ctl.schema, knob)   # what one switch holds, decoded

Match values follow the P4Info's match kind of each field: exact/optional `v`, lpm
`(value, prefix length)`, range `(low, high)`, ternary `(value, mask)`. A knob with no match
fields sets its table's default action (`Knob.sets_default`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeAlias

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt import P4RuntimeError
from controller.schema import Schema, decode, encode
from controller.state import DeviceState, add_read_entities, plan_updates
from mechanisms import Knob
from topos.errors import FabricLabError

Entity: TypeAlias = p4runtime_pb2.Entity
MatchValue: TypeAlias = int | tuple[int, int]
Row: TypeAlias = tuple[Sequence[MatchValue], Mapping[str, int]]  # (match values, params)
_KINDS = {p4info_pb2.MatchField.EXACT: "exact", p4info_pb2.MatchField.LPM: "lpm",
          p4info_pb2.MatchField.TERNARY: "ternary", p4info_pb2.MatchField.RANGE: "range",
          p4info_pb2.MatchField.OPTIONAL: "optional"}


class KnobError(FabricLabError, ValueError):
    """A knob setting that does not fit the knob (match values, parameters)."""


class _Client(Protocol):
    def read(self, entities: Iterable[Entity]) -> list[Entity]: ...
    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None: ...


class _Fabric(Protocol):  # controller.fabric.FabricController
    schema: Schema

    @property
    def clients(self) -> Mapping[str, _Client]: ...


def set_action(schema: Schema, msg: p4runtime_pb2.Action, action: str,
               params: Mapping[str, int]) -> None:
    """Fill `msg` with `action` and its `params` (by name), canonically encoded."""
    msg.action_id = schema.action(action).preamble.id
    for name, value in params.items():
        p = schema.param(action, name)
        msg.params.add(param_id=p.id, value=encode(value, p.bitwidth, name))


def _params(knob: Knob, params: Mapping[str, int]) -> Mapping[str, int]:
    if set(params) != set(knob.params):
        raise KnobError(f"knob {knob.name} takes parameters ({', '.join(knob.params)}), "
                        f"got ({', '.join(params)})")
    return {name: params[name] for name in knob.params}


def knob_entry(schema: Schema, knob: Knob, match: Sequence[MatchValue],
               params: Mapping[str, int], priority: int = 0) -> Entity:
    """One entry of the knob's table: `match` values in the order of `knob.match`."""
    if knob.sets_default:
        raise KnobError(f"knob {knob.name} sets the default action of {knob.table}: no entries")
    if len(match) != len(knob.match):
        raise KnobError(f"knob {knob.name} matches on ({', '.join(knob.match)}), "
                        f"got {len(match)} value(s)")
    entity = Entity()
    entry = entity.table_entry
    entry.table_id = schema.table(knob.table).preamble.id
    entry.priority = priority
    for name, value in zip(knob.match, match, strict=True):
        mf = schema.match_field(knob.table, name)
        kind = _KINDS.get(mf.match_type)
        fm = entry.match.add(field_id=mf.id)
        parts = value if isinstance(value, tuple) else (value,)
        if kind in ("exact", "optional") and len(parts) == 1:
            getattr(fm, kind).value = encode(parts[0], mf.bitwidth, name)
        elif kind == "lpm" and len(parts) == 2:
            fm.lpm.value, fm.lpm.prefix_len = encode(parts[0], mf.bitwidth, name), parts[1]
        elif kind == "range" and len(parts) == 2:
            fm.range.low = encode(parts[0], mf.bitwidth, name)
            fm.range.high = encode(parts[1], mf.bitwidth, name)
        elif kind == "ternary" and len(parts) == 2:
            fm.ternary.value = encode(parts[0], mf.bitwidth, name)
            fm.ternary.mask = encode(parts[1], mf.bitwidth, name)
        else:
            raise KnobError(f"knob {knob.name}: {kind} field {name} cannot take {value!r}")
    set_action(schema, entry.action.action, knob.action, _params(knob, params))
    return entity


def knob_default(schema: Schema, knob: Knob, params: Mapping[str, int]) -> Entity:
    """The default action of the knob's table, set to the knob's action with `params`."""
    entity = Entity()
    entity.table_entry.table_id = schema.table(knob.table).preamble.id
    entity.table_entry.is_default_action = True
    set_action(schema, entity.table_entry.action.action, knob.action, _params(knob, params))
    return entity


def knob_state(schema: Schema, knob: Knob, rows: Iterable[Row] = (), *,
               default: Mapping[str, int] | None = None, priority: int = 0) -> DeviceState:
    """What a switch holds with this setting: the entries `rows`, or (for a default-action knob)
    the default action with `default`'s parameters."""
    if knob.sets_default:
        if default is None:
            raise KnobError(f"knob {knob.name} sets a default action: give its parameters")
        return add_read_entities(DeviceState(), [knob_default(schema, knob, default)])
    return add_read_entities(DeviceState(), [knob_entry(schema, knob, match, params, priority)
                                             for match, params in rows])


def read_knob(client: _Client, schema: Schema, knob: Knob) -> DeviceState:
    """The knob's table as a switch holds it: its entries, or its default action (empty if the
    switch cannot read default entries: rewriting them is harmless)."""
    entity = Entity()
    entity.table_entry.table_id = schema.table(knob.table).preamble.id
    entity.table_entry.is_default_action = knob.sets_default
    try:
        return add_read_entities(DeviceState(), client.read([entity]))
    except P4RuntimeError as err:
        if knob.sets_default and err.code == "UNIMPLEMENTED":
            return DeviceState()
        raise


def sync_knob(client: _Client, schema: Schema, knob: Knob, want: DeviceState) -> int:
    """Bring one switch's knob table to `want`; returns the updates written (0 when it held it)."""
    writes = 0
    for batch in plan_updates(want, read_knob(client, schema, knob)):
        client.write(batch)
        writes += len(batch)
    return writes


def set_knob(ctl: _Fabric, knob: Knob, rows: Iterable[Row] = (), *,
             default: Mapping[str, int] | None = None, priority: int = 0,
             switches: Iterable[str] | None = None) -> dict[str, int]:
    """The same setting on every connected switch (or the named ones); updates per switch.
    Errors from all switches are collected and raised together."""
    want = knob_state(ctl.schema, knob, list(rows), default=default, priority=priority)
    written, errors = {}, []
    for name in switches if switches is not None else list(ctl.clients):
        try:
            written[name] = sync_knob(ctl.clients[name], ctl.schema, knob, want)
        except (P4RuntimeError, KeyError, ValueError) as err:
            errors.append(f"switch {name}: {err}")
    if errors:
        raise RuntimeError(f"knob {knob.name} failed on " + "\n".join(errors))
    return written


def knob_values(client: _Client, schema: Schema, knob: Knob) -> dict[tuple, dict[str, int]]:
    """What one switch holds for the knob, decoded: match values in the order of `knob.match`
    (`()` for the default action) -> parameters by name. Empty when nothing was written (or the
    switch cannot read default actions)."""
    action = schema.action(knob.action)
    names = {p.id: p.name for p in action.params}
    order = [schema.match_field(knob.table, name).id for name in knob.match]
    state = read_knob(client, schema, knob)
    held: list[tuple[tuple, tuple]] = [((), a) for a in state.defaults.values()]
    for (_table, match, _priority), a in state.entries.items():
        by_field = {fid: tuple(p if isinstance(p, int) else decode(p) for p in parts)
                    for fid, _kind, *parts in match}
        held.append((tuple(v[0] if len(v) == 1 else v
                           for v in (by_field[fid] for fid in order)), a))
    return {key: {names[pid]: decode(value) for pid, value in a[2]}
            for key, a in held if a[0] == "action" and a[1] == action.preamble.id}
