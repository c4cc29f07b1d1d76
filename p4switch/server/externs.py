"""Counters, direct counters, meters and direct meters."""

from __future__ import annotations

from typing import Any

from p4.v1 import p4runtime_pb2

from p4switch.p4info_index import P4InfoIndex
from p4switch.runtime.errors import invalid, out_of_range, unimplemented
from p4switch.server.tables import TableCodec, invalid_id, meter_config

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity


def _check_modify(kind: int, what: str) -> None:
    if kind == Update.UNSPECIFIED:
        raise invalid("Update type is not set")
    if kind != Update.MODIFY:
        name = Update.Type.Name(kind) if kind in Update.Type.values() else str(kind)
        raise invalid(f"{name} update type not supported for {what}")


def _objects(index: P4InfoIndex, kind: str, id_: int, what: str) -> list:
    if id_ == 0:
        return list(getattr(index.p4info, kind))
    if index.kind(id_) != kind:
        raise invalid_id(what, id_)
    return [index.get(id_)]


def _indices(msg: Any, size: int) -> range:
    if not msg.HasField("index"):
        return range(size)
    i = msg.index.index
    if i < 0:
        raise invalid("A negative number is not a valid index value")
    if i >= size:
        raise out_of_range(f"index {i} out of range (size {size})")
    return range(i, i + 1)


def _entry_of(tables: TableCodec, te: p4runtime_pb2.TableEntry):
    info, table = tables._table(te.table_id)
    return info, table, table.get(tables.decode_key(info, te), te.priority)


class CounterCodec:
    def __init__(self, index: P4InfoIndex, state: Any, tables: TableCodec):
        self.index, self.state, self.tables = index, state, tables

    def write(self, kind: int, msg: p4runtime_pb2.CounterEntry) -> None:
        if self.index.kind(msg.counter_id) != "counters":
            raise invalid_id("counter", msg.counter_id)
        if not msg.HasField("index"):
            raise unimplemented("Wildcard write is not supported for indirect counters yet")
        if msg.index.index < 0:
            raise invalid("A negative number is not a valid index value")
        _check_modify(kind, "counters")
        array = self.state.counters[self.index.name(msg.counter_id)]
        array.write(msg.index.index, msg.data.packet_count, msg.data.byte_count)

    def read(self, msg: p4runtime_pb2.CounterEntry) -> list[Entity]:
        out = []
        for info in _objects(self.index, "counters", msg.counter_id, "counter"):
            array = self.state.counters[info.preamble.name]
            for i in _indices(msg, array.size):
                packets, nbytes = array.read(i)
                ent = Entity()
                c = ent.counter_entry
                c.counter_id = info.preamble.id
                c.index.index = i
                c.data.packet_count, c.data.byte_count = packets, nbytes
                out.append(ent)
        return out

    def write_direct(self, kind: int, msg: p4runtime_pb2.DirectCounterEntry) -> None:
        _check_modify(kind, "direct counters")
        info, _, entry = self._direct(msg.table_entry)
        entry.direct_counter[:] = [msg.data.packet_count, msg.data.byte_count]

    def _direct(self, te: p4runtime_pb2.TableEntry):
        info, table, entry = _entry_of(self.tables, te)
        if table.model.direct_counter is None:
            raise invalid(f"table {info.preamble.name} has no direct counter")
        return info, table, entry

    def read_direct(self, msg: p4runtime_pb2.DirectCounterEntry) -> list[Entity]:
        te = msg.table_entry
        if te.table_id == 0 or not te.match:
            infos = _objects(self.index, "tables", te.table_id, "table")
            pairs = [(i, e) for i in infos
                     if self.state.tables[i.preamble.name].model.direct_counter
                     for e in self.state.tables[i.preamble.name].entries()]
        else:
            info, _, entry = self._direct(te)
            pairs = [(info, entry)]
        out = []
        for info, entry in pairs:
            ent = Entity()
            d = ent.direct_counter_entry
            d.table_entry.CopyFrom(self.tables._entity(info, entry, te).table_entry)
            d.data.packet_count, d.data.byte_count = entry.direct_counter
            out.append(ent)
        return out


class MeterCodec:
    def __init__(self, index: P4InfoIndex, state: Any, tables: TableCodec):
        self.index, self.state, self.tables = index, state, tables

    def write(self, kind: int, msg: p4runtime_pb2.MeterEntry) -> None:
        if self.index.kind(msg.meter_id) != "meters":
            raise invalid_id("meter", msg.meter_id)
        if not msg.HasField("index"):
            raise unimplemented("Wildcard write is not supported for indirect meters yet")
        if msg.index.index < 0:
            raise invalid("A negative number is not a valid index value")
        _check_modify(kind, "meters")
        array = self.state.meters[self.index.name(msg.meter_id)]
        if msg.HasField("config"):
            c = msg.config
            array.set_config(msg.index.index, c.cir, c.cburst, c.pir, c.pburst)
        else:
            array.reset_config(msg.index.index)

    def read(self, msg: p4runtime_pb2.MeterEntry) -> list[Entity]:
        out = []
        for info in _objects(self.index, "meters", msg.meter_id, "meter"):
            array = self.state.meters[info.preamble.name]
            for i in _indices(msg, array.size):
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

    def write_direct(self, kind: int, msg: p4runtime_pb2.DirectMeterEntry) -> None:
        _check_modify(kind, "direct meters")
        _, table, entry = _entry_of(self.tables, msg.table_entry)
        table.set_meter_config(entry, meter_config(msg.config) if msg.HasField("config")
                               else None)

    def read_direct(self, msg: p4runtime_pb2.DirectMeterEntry) -> list[Entity]:
        te = msg.table_entry
        if te.table_id == 0 or not te.match:
            infos = _objects(self.index, "tables", te.table_id, "table")
            pairs = [(i, e) for i in infos
                     if self.state.tables[i.preamble.name].model.direct_meter
                     for e in self.state.tables[i.preamble.name].entries()]
        else:
            info, _, entry = _entry_of(self.tables, te)
            pairs = [(info, entry)]
        out = []
        for info, entry in pairs:
            ent = Entity()
            d = ent.direct_meter_entry
            d.table_entry.CopyFrom(self.tables._entity(info, entry, te).table_entry)
            c = entry.meter_config
            if c is not None:
                d.config.cir, d.config.cburst, d.config.pir, d.config.pburst = (
                    c.cir, c.cburst, c.pir, c.pburst)
            out.append(ent)
        return out
