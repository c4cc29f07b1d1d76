"""`counter(size, type)`: packets and bytes per index.

The runtime CLI's `counter_*` commands take direct counters too (by the table entry's handle),
as BMv2's do; their direct half is in `direct_counter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4switch import cpmodel as cp
from p4switch.externs import direct_counter
from p4switch.externs.base import (
    Cells,
    ExternCodec,
    ExternKind,
    P4RuntimeEntity,
    check_indexed_write,
    check_modify,
    cli_index,
    indices,
    objects,
)
from p4switch.externs.direct_counter import P4INFO_UNITS, UNITS
from p4switch.p4info import ids
from p4switch.runtime.cli_parsing import CliError, parse_int
from p4switch.runtime.errors import RuntimeApiError, invalid, out_of_range

if TYPE_CHECKING:  # protobuf only where P4Info or P4Runtime is used: the packet path never is
    from p4.v1 import p4runtime_pb2


class CounterArray:
    """The runtime state of one counter."""

    def __init__(self, name: str, size: int, unit: str = "packets_and_bytes") -> None:
        self.name = name
        self.size = size
        self.unit = unit
        self._packets: Cells = [0] * size
        self._bytes: Cells = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        """Data plane: one packet of nbytes; an index out of range is ignored."""
        if 0 <= index < self.size:
            self._packets[index] += 1
            self._bytes[index] += nbytes

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise out_of_range(f"counter {self.name}: index {index} out of range "
                               f"(size {self.size})")

    def read(self, index: int) -> tuple[int, int]:
        self._check(index)
        return self._packets[index], self._bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        self._check(index)
        if packets < 0 or nbytes < 0:
            raise invalid(f"counter {self.name}: counts cannot be negative")
        self._packets[index] = packets
        self._bytes[index] = nbytes

    def reset(self) -> None:
        # in place: the generated code holds the lists (`_count`)
        self._packets[:] = [0] * self.size
        self._bytes[:] = [0] * self.size

    def share(self, packets: Cells, nbytes: Cells) -> None:
        """The counts live in `packets` and `nbytes` from now on (the C data plane's memory),
        with their values; a pipeline made before keeps the old ones."""
        packets[:], nbytes[:] = self._packets, self._bytes
        self._packets, self._bytes = packets, nbytes


# ---- declaration and generated code ---------------------------------------------------------

def declare(ctx, sym, name: str, annos: list, eid: int | None, args: list, key: tuple) -> str:
    ctx.model.add("counters", cp.Counter(name, annos, eid, UNITS[args[1]], args[0]), key)
    return ctx.program.closure(f"_counters[{name!r}]", "C")


def _count(ctx, c, obj, env) -> None:
    """`CounterArray.count` inlined: the packet path's most frequent extern call."""
    counter = ctx.extern.instance(obj, env)
    packets = ctx.program.closure(f"{counter}._packets", "Cp")
    nbytes = ctx.program.closure(f"{counter}._bytes", "Cb")
    size = ctx.program.closure(f"{counter}.size", "Cn")
    index = ctx.em.fresh("ci")
    ctx.em.line(f"{index} = {ctx.expr.ex(ctx.extern.args(c)[0], env)}")
    ctx.em.line(f"if 0 <= {index} < {size}:")
    with ctx.em.indent():
        ctx.em.line(f"{packets}[{index}] += 1")
        ctx.em.line(f"{nbytes}[{index}] += ctx.length")


# ---- P4Info and P4Runtime -------------------------------------------------------------------

def p4info_entry(builder, counter: cp.Counter) -> None:
    msg = builder.p4info.counters.add()
    builder.preamble(msg, ids.COUNTER, counter.name, counter)
    msg.spec.unit = msg.spec.Unit.Value(P4INFO_UNITS[counter.unit])
    msg.size = counter.size


def p4rt_write(codec: ExternCodec, kind: int, msg: p4runtime_pb2.CounterEntry) -> None:
    check_indexed_write(codec, "counters", msg.counter_id, msg, "counter")
    check_modify(kind, "counters")
    array = codec.state.counters[codec.index.name(msg.counter_id)]
    array.write(msg.index.index, msg.data.packet_count, msg.data.byte_count)


def p4rt_read(codec: ExternCodec, msg: p4runtime_pb2.CounterEntry) -> list:
    from p4.v1.p4runtime_pb2 import Entity

    out = []
    for info in objects(codec.index, "counters", msg.counter_id, "counter"):
        array = codec.state.counters[info.preamble.name]
        for i in indices(msg, array.size):
            packets, nbytes = array.read(i)
            ent = Entity()
            c = ent.counter_entry
            c.counter_id = info.preamble.id
            c.index.index = i
            c.data.packet_count, c.data.byte_count = packets, nbytes
            out.append(ent)
    return out


# ---- runtime CLI (BMv2's counter_* commands, direct counters included) ------------------------

def counter_read(cli, args: list[str]) -> None:
    cli.exactly(args, 2)
    name, index = args[0], cli_index(args[1])
    table = direct_counter.cli_table(cli, name)
    if table is not None:
        cli.p("this is the direct counter for table", table.name)
        try:
            packets, nbytes = table.by_handle(index).direct_counter
        except RuntimeApiError:
            raise CliError("Invalid table operation (INVALID_HANDLE)") from None
    else:
        try:
            packets, nbytes = cli.resolve("counter", name).read(index)
        except RuntimeApiError:
            raise CliError("Invalid counter operation (INVALID_INDEX)") from None
    cli.p(f"{name}[{index}]= ({nbytes} bytes, {packets} packets)")


def counter_write(cli, args: list[str]) -> None:
    cli.exactly(args, 4)
    name, index = args[0], cli_index(args[1])
    packets, nbytes = parse_int(args[2], "packets"), parse_int(args[3], "bytes")
    table = direct_counter.cli_table(cli, name)
    if table is not None:
        cli.p("writing to direct counter for table", table.name)
        try:
            table.by_handle(index).direct_counter[:] = [packets, nbytes]
        except RuntimeApiError:
            raise CliError("Invalid table operation (INVALID_HANDLE)") from None
    else:
        try:
            cli.resolve("counter", name).write(index, packets, nbytes)
        except RuntimeApiError:
            raise CliError("Invalid counter operation (INVALID_INDEX)") from None
    cli.p(f"{name}[{index}] has been updated")


def counter_reset(cli, args: list[str]) -> None:
    cli.exactly(args, 1)
    table = direct_counter.cli_table(cli, args[0])
    if table is not None:
        cli.p("this is the direct counter for table", table.name)
        for entry in table.entries():
            entry.direct_counter[:] = [0, 0]
    else:
        cli.resolve("counter", args[0]).reset()


KIND = ExternKind(
    type_name="counter",
    declare=declare,
    methods={"count": _count},
    p4info_kind=ids.COUNTER,
    p4info_objects=lambda model: [c for c in model.counters if c.direct_table is None],
    p4info_entry=p4info_entry,
    state_objects=lambda model: [c for c in model.counters if not c.direct_table],
    new_state=lambda c: CounterArray(c.name, c.size, c.unit),
    entity=P4RuntimeEntity("counter_entry", p4rt_read, p4rt_write),
    cli={"counter_read": counter_read, "counter_write": counter_write,
         "counter_reset": counter_reset},
)
