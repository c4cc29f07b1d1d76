"""`meter(size, type)`: an array of two-rate three-colour meters (`runtime.meters` holds the
algorithm, shared with `direct_meter`).

The runtime CLI's `meter_*` commands take direct meters too (by the table entry's handle), as
BMv2's do; their direct half is in `direct_meter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch import cpmodel as cp
from p4switch.externs import direct_meter
from p4switch.externs.base import (
    ExternCodec,
    ExternKind,
    P4RuntimeEntity,
    check_indexed_write,
    check_modify,
    cli_index,
    indices,
    objects,
)
from p4switch.externs.direct_meter import P4INFO_UNITS, UNITS
from p4switch.p4info import ids
from p4switch.runtime.cli_parsing import CliError
from p4switch.runtime.errors import RuntimeApiError, out_of_range
from p4switch.runtime.meters import GREEN, MeterCell, MeterConfig

if TYPE_CHECKING:  # protobuf only where P4Info or P4Runtime is used: the packet path never is
    from p4.v1 import p4runtime_pb2


class MeterArray:
    """The runtime state of one meter."""

    def __init__(self, name: str, size: int, unit: str = "bytes") -> None:
        self.name = name
        self.size = size
        self.unit = unit
        self._cells = [MeterCell(unit) for _ in range(size)]

    def cell(self, index: int) -> MeterCell:
        """The meter instance at index (OUT_OF_RANGE if there is none)."""
        return self._cell(index)

    def _cell(self, index: int) -> MeterCell:
        if not 0 <= index < self.size:
            raise out_of_range(f"meter {self.name}: index {index} out of range "
                               f"(size {self.size})")
        return self._cells[index]

    def execute(self, index: int, nbytes: int, now_us: int) -> int:
        """Colour for one packet; an index out of range gives GREEN."""
        if not 0 <= index < self.size:
            return GREEN
        return self._cells[index].execute(nbytes, now_us)

    def set_config(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """P4Runtime form: rates in units per second."""
        self._cell(index).set_config(MeterConfig(cir, cburst, pir, pburst))

    def set_rates(self, index: int, rates: list[tuple[float, int]]) -> None:
        """BMv2 CLI form: [(CIR per µs, CBS), (PIR per µs, PBS)]."""
        self._cell(index).set_rates(rates)

    def rates(self, index: int) -> list[tuple[float, int]]:
        return self._cell(index).rates()

    def config(self, index: int) -> MeterConfig | None:
        return self._cell(index).config

    def reset_config(self, index: int) -> None:
        self._cell(index).reset()

    def reset(self) -> None:
        for cell in self._cells:
            cell.reset()


# ---- declaration and generated code ---------------------------------------------------------

def declare(ctx, sym, name: str, annos: list, eid: int | None, args: list, key: tuple) -> str:
    ctx.model.add("meters", cp.Meter(name, annos, eid, UNITS[args[1]], args[0]), key)
    return ctx.program.closure(f"_meters[{name!r}]", "M")


def _execute_meter(ctx, c, obj, env) -> None:
    index, out = ctx.extern.args(c)
    ctx.stmt.assign(out, f"{ctx.extern.instance(obj, env)}.execute({ctx.expr.ex(index, env)}, ctx.length, "
                    "_now())", env)


# ---- P4Info and P4Runtime -------------------------------------------------------------------

def p4info_entry(builder, meter: cp.Meter) -> None:
    msg = builder.p4info.meters.add()
    builder.preamble(msg, ids.METER, meter.name, meter)
    msg.spec.unit = msg.spec.Unit.Value(P4INFO_UNITS[meter.unit])
    msg.size = meter.size


def p4rt_write(codec: ExternCodec, kind: int, msg: p4runtime_pb2.MeterEntry) -> None:
    check_indexed_write(codec, "meters", msg.meter_id, msg, "meter")
    check_modify(kind, "meters")
    array = codec.state.meters[codec.index.name(msg.meter_id)]
    if msg.HasField("config"):
        c = msg.config
        array.set_config(msg.index.index, c.cir, c.cburst, c.pir, c.pburst)
    else:
        array.reset_config(msg.index.index)


def p4rt_read(codec: ExternCodec, msg: p4runtime_pb2.MeterEntry) -> list:
    from p4.v1.p4runtime_pb2 import Entity

    out = []
    for info in objects(codec.index, "meters", msg.meter_id, "meter"):
        array = codec.state.meters[info.preamble.name]
        for i in indices(msg, array.size):
            ent = Entity()
            m = ent.meter_entry
            m.meter_id = info.preamble.id
            m.index.index = i
            config = array.config(i)
            if config is not None:
                m.config.cir, m.config.cburst = config.cir, config.cburst
                m.config.pir, m.config.pburst = config.pir, config.pburst
            out.append(ent)
    return out


# ---- runtime CLI (BMv2's meter_* commands, direct meters included) ----------------------------

def _cell(cli, name: str, index: int) -> MeterCell:
    direct = direct_meter.cli_entry(cli, name, index)
    if direct is not None:
        return direct[1].meter or MeterCell("bytes")
    meter = cli.resolve("meter", name)
    if not 0 <= index < meter.size:
        raise CliError("Invalid meter operation (INVALID_INDEX)")
    return meter.cell(index)


def _rates(texts: list[str]) -> list[tuple[float, int]]:
    if len(texts) != 2:
        raise CliError(f"Error: Invalid number of rates, expected 2 but got {len(texts)}")
    rates = []
    for text in texts:
        try:
            r, b = text.split(":")
            rates.append((float(r), int(b)))
        except ValueError:
            raise CliError("Error: Error while parsing rates") from None
    return rates


def meter_set_rates(cli, args: list[str]) -> None:
    cli.at_least(args, 2)
    index = cli_index(args[1])
    direct = direct_meter.cli_entry(cli, args[0], index)
    cell = None if direct else _cell(cli, args[0], index)
    rates = _rates(args[2:])
    try:
        if direct:
            table, entry = direct
            table.set_meter_config(entry, MeterConfig.from_cli_rates(rates))
        else:
            assert cell is not None  # not direct: made above
            cell.set_rates(rates)
    except RuntimeApiError:
        raise CliError("Invalid meter operation (INVALID_INFO_RATE_VALUE)") from None


def meter_array_set_rates(cli, args: list[str]) -> None:
    cli.at_least(args, 1)
    meter = cli.resolve("meter", args[0])
    rates = _rates(args[1:])
    try:
        for i in range(meter.size):
            meter.set_rates(i, rates)
    except RuntimeApiError:
        raise CliError("Invalid meter operation (INVALID_INFO_RATE_VALUE)") from None


def meter_get_rates(cli, args: list[str]) -> None:
    cli.exactly(args, 2)
    rates = _cell(cli, args[0], cli_index(args[1])).rates()
    if len(rates) != 2:
        cli.out.append(f"WARNING: expected 2 rates but only received {len(rates)}")
    for i, (rate, burst) in enumerate(rates):
        cli.p(f"{i}: info rate = {rate}, burst size = {burst}")


KIND = ExternKind(
    type_name="meter",
    declare=declare,
    methods={"execute_meter": _execute_meter},
    p4info_kind=ids.METER,
    p4info_objects=lambda model: [m for m in model.meters if m.direct_table is None],
    p4info_entry=p4info_entry,
    state_objects=lambda model: [m for m in model.meters if not m.direct_table],
    new_state=lambda m: MeterArray(m.name, m.size, m.unit),
    entity=P4RuntimeEntity("meter_entry", p4rt_read, p4rt_write),
    cli={"meter_set_rates": meter_set_rates, "meter_array_set_rates": meter_array_set_rates,
         "meter_get_rates": meter_get_rates},
)
