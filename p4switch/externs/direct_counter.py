"""`direct_counter(type)`: packets and bytes per entry of the table it is attached to.

The counts live in the table entries (`Entry.direct_counter`, [packets, bytes]) and the table's
apply code counts a hit (`backend.tables`); the runtime CLI reaches them through the
`counter_*` commands (`externs.counter`), by entry handle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch import cpmodel as cp
from p4switch.externs.base import (
    ExternCodec,
    ExternKind,
    P4RuntimeEntity,
    check_modify,
    entry_of,
    read_entries,
)
from p4switch.names import suffix_match
from p4switch.p4info import ids
from p4switch.runtime.errors import invalid

if TYPE_CHECKING:  # protobuf only where P4Info or P4Runtime is used: the packet path never is
    from p4.v1 import p4runtime_pb2

UNITS = ("packets", "bytes", "packets_and_bytes")  # v1model's CounterType, in order
P4INFO_UNITS = {"packets": "PACKETS", "bytes": "BYTES", "packets_and_bytes": "BOTH"}  # CounterSpec


def declare(ctx, sym, name: str, annos: list, eid: int | None, args: list, key: tuple) -> None:
    ctx.model.add("counters", cp.Counter(name, annos, eid, UNITS[args[0]], 0,
                                         ctx.direct_owner.get(id(sym))), key)
    return None


def unattached(name: str, annos: list, eid: int | None, args: list) -> cp.Counter:
    """The model entry of a direct counter no table uses (it has an id, but no P4Info entry)."""
    return cp.Counter(name, annos, eid, UNITS[args[0]])


def _count(ctx, c, obj, env) -> str:
    return ""  # the table counts its hits


def p4info_entry(builder, name: str) -> None:
    counter = cp.find_named(builder.model.counters, name, "direct counter")
    msg = builder.p4info.direct_counters.add()
    builder.preamble(msg, ids.DIRECT_COUNTER, counter.name, counter)
    msg.spec.unit = msg.spec.Unit.Value(P4INFO_UNITS[counter.unit])
    msg.direct_table_id = builder.symbols.id(ids.TABLE, counter.direct_table)


def p4info_symbols(model: cp.ControlPlaneModel) -> list[cp.Named]:
    return [*(c for c in model.counters if c.direct_table),
            *(x for x in model.unattached_direct if isinstance(x, cp.Counter))]


def _entry(codec: ExternCodec, te: p4runtime_pb2.TableEntry):
    info, table, entry = entry_of(codec, te)
    if table.model.direct_counter is None:
        raise invalid(f"table {info.preamble.name} has no direct counter")
    return info, table, entry


def p4rt_write(codec: ExternCodec, kind: int, msg: p4runtime_pb2.DirectCounterEntry) -> None:
    check_modify(kind, "direct counters")
    info, _, entry = _entry(codec, msg.table_entry)
    entry.direct_counter[:] = [msg.data.packet_count, msg.data.byte_count]


def p4rt_read(codec: ExternCodec, msg: p4runtime_pb2.DirectCounterEntry) -> list:
    from p4.v1.p4runtime_pb2 import Entity

    te = msg.table_entry
    pairs = read_entries(codec, te, "direct_counter", _entry)
    out = []
    for info, entry in pairs:
        ent = Entity()
        d = ent.direct_counter_entry
        d.table_entry.CopyFrom(codec.tables._entity(info, entry, te).table_entry)
        d.data.packet_count, d.data.byte_count = entry.direct_counter
        out.append(ent)
    return out


def cli_table(cli, name: str):
    """The runtime table whose direct counter `name` names (a dot-suffix will do), or None."""
    for c in cli.state.model.counters:
        if c.direct_table and suffix_match(c.name, name):
            return cli.state.tables[c.direct_table]
    return None


KIND = ExternKind(
    type_name="direct_counter",
    declare=declare,
    methods={"count": _count},
    direct=True,
    unattached=unattached,
    table_attribute="direct_counter",
    p4info_kind=ids.DIRECT_COUNTER,
    p4info_symbols=p4info_symbols,
    p4info_entry=p4info_entry,
    entity=P4RuntimeEntity("direct_counter_entry", p4rt_read, p4rt_write),
)
