"""`direct_meter<T>(type)`: a two-rate three-colour meter per entry of the table it is
attached to.

The meter cells live in the table entries (`Entry.meter`, a `runtime.meters.MeterCell`) and the
table's apply code executes one on a hit (`backend.tables`), whose colour `read()` gives in
the table's actions; the runtime CLI reaches them through the `meter_*` commands
(`externs.meter`), by entry handle.
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
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.names import suffix_match
from p4switch.p4info import ids
from p4switch.runtime.cli_parsing import CliError
from p4switch.runtime.errors import RuntimeApiError
from p4switch.runtime.meters import MeterConfig

if TYPE_CHECKING:  # protobuf only where P4Info or P4Runtime is used: the packet path never is
    from p4.v1 import p4runtime_pb2

UNITS = ("packets", "bytes")  # v1model's MeterType, in order
P4INFO_UNITS = {"packets": "PACKETS", "bytes": "BYTES"}  # MeterSpec.Unit


def declare(ctx, sym, name: str, annos: list, eid: int | None, args: list, key: tuple) -> None:
    ctx.model.add("meters", cp.Meter(name, annos, eid, UNITS[args[0]], 0,
                                     ctx.direct_owner.get(id(sym))), key)
    return None


def unattached(name: str, annos: list, eid: int | None, args: list) -> cp.Meter:
    """The model entry of a direct meter no table uses (it has an id, but no P4Info entry)."""
    return cp.Meter(name, annos, eid, UNITS[args[0]])


def _read(ctx, c, obj, env) -> None:
    (out,) = ctx.extern.args(c)
    color = ctx.meter_colors.get(id(obj.ref))
    if color is None:
        raise UnsupportedConstruct(c.pos, "direct_meter.read outside an action of its table")
    ctx.em.line(f"if {color} is not None:")
    with ctx.em.indent():
        ctx.stmt.assign(out, color, env)


def p4info_entry(builder, name: str) -> None:
    meter = cp.find_named(builder.model.meters, name, "direct meter")
    msg = builder.p4info.direct_meters.add()
    builder.preamble(msg, ids.DIRECT_METER, meter.name, meter)
    msg.spec.unit = msg.spec.Unit.Value(P4INFO_UNITS[meter.unit])
    msg.direct_table_id = builder.symbols.id(ids.TABLE, meter.direct_table)


def p4info_symbols(model: cp.ControlPlaneModel) -> list[cp.Named]:
    return [*(m for m in model.meters if m.direct_table),
            *(x for x in model.unattached_direct if isinstance(x, cp.Meter))]


def p4rt_write(codec: ExternCodec, kind: int, msg: p4runtime_pb2.DirectMeterEntry) -> None:
    check_modify(kind, "direct meters")
    _, table, entry = entry_of(codec, msg.table_entry)
    c = msg.config
    table.set_meter_config(entry, MeterConfig(cir=c.cir, cburst=c.cburst, pir=c.pir,
                                              pburst=c.pburst)
                           if msg.HasField("config") else None)


def p4rt_read(codec: ExternCodec, msg: p4runtime_pb2.DirectMeterEntry) -> list:
    from p4.v1.p4runtime_pb2 import Entity

    te = msg.table_entry
    pairs = read_entries(codec, te, "direct_meter", entry_of)
    out = []
    for info, entry in pairs:
        ent = Entity()
        d = ent.direct_meter_entry
        d.table_entry.CopyFrom(codec.tables._entity(info, entry, te).table_entry)
        c = entry.meter_config
        if c is not None:
            d.config.cir, d.config.cburst, d.config.pir, d.config.pburst = (
                c.cir, c.cburst, c.pir, c.pburst)
        out.append(ent)
    return out


def cli_entry(cli, name: str, index: int):
    """(table, entry) when `name` names a direct meter (index = entry handle), else None."""
    for m in cli.state.model.meters:
        if m.direct_table and suffix_match(m.name, name):
            table = cli.state.tables[m.direct_table]
            try:
                return table, table.by_handle(index)
            except RuntimeApiError:
                raise CliError("Invalid table operation (INVALID_HANDLE)") from None
    return None


KIND = ExternKind(
    type_name="direct_meter",
    declare=declare,
    methods={"read": _read},
    direct=True,
    unattached=unattached,
    table_attribute="direct_meter",
    p4info_kind=ids.DIRECT_METER,
    p4info_symbols=p4info_symbols,
    p4info_entry=p4info_entry,
    entity=P4RuntimeEntity("direct_meter_entry", p4rt_read, p4rt_write),
)
