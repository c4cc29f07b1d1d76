"""Counters, direct counters, meters, direct meters, the PRE and digest configuration."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from p4.v1 import p4runtime_pb2

from p4switch.p4info_index import P4InfoIndex
from p4switch.runtime.errors import (
    RuntimeApiError,
    already_exists,
    invalid,
    not_found,
    out_of_range,
    unimplemented,
)
from p4switch.server.bytestrings import to_bytes
from p4switch.server.tables import TableCodec, invalid_id, meter_config, port_from_bytes

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


def _check_update(kind: int) -> None:
    if kind not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise invalid("Update type is not set" if kind == Update.UNSPECIFIED
                      else "Invalid update type")


def _replicas(replicas, what: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for r in replicas:
        port = port_from_bytes(r.port) if r.port else r.egress_port
        if not r.port and not r.egress_port:
            raise invalid(f"Missing port in {what} replica")
        if (port, r.instance) in out:
            raise invalid(f"Duplicate replica in {what}")
        out.append((port, r.instance))
    return out


class PreCodec:
    """Multicast groups and clone sessions; their P4Runtime view is kept here for Read."""

    def __init__(self, state: Any):
        self.pre = state.pre
        self.groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = {}
        self.sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = {}

    def write(self, kind: int, msg: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        which = msg.WhichOneof("type")
        if which == "multicast_group_entry":
            self._write_group(kind, msg.multicast_group_entry)
        elif which == "clone_session_entry":
            self._write_session(kind, msg.clone_session_entry)
        else:
            raise invalid("Invalid PRE operation")

    def _write_group(self, kind: int, g: p4runtime_pb2.MulticastGroupEntry) -> None:
        gid = g.multicast_group_id
        _check_update(kind)
        if kind == Update.DELETE:
            self.pre.delete_multicast_group(gid)
            self.groups.pop(gid, None)
            return
        replicas = _replicas(g.replicas, "multicast group")
        if kind == Update.INSERT:
            self.pre.insert_multicast_group(gid, replicas)
        else:
            self.pre.modify_multicast_group(gid, replicas)
        self.groups[gid] = type(g)()
        self.groups[gid].CopyFrom(g)

    def _write_session(self, kind: int, s: p4runtime_pb2.CloneSessionEntry) -> None:
        sid = s.session_id
        _check_update(kind)
        if kind == Update.DELETE:
            self.pre.delete_clone_session(sid)
            self.sessions.pop(sid, None)
            return
        replicas = _replicas(s.replicas, "clone session")
        if kind == Update.INSERT:
            self.pre.insert_clone_session(sid, replicas, s.class_of_service,
                                          s.packet_length_bytes)
        else:
            self.pre.modify_clone_session(sid, replicas, s.class_of_service,
                                          s.packet_length_bytes)
        self.sessions[sid] = type(s)()
        self.sessions[sid].CopyFrom(s)

    def read(self, msg: p4runtime_pb2.PacketReplicationEngineEntry) -> list[Entity]:
        which = msg.WhichOneof("type")
        if which == "multicast_group_entry":
            gid = msg.multicast_group_entry.multicast_group_id
            items = [self.groups[gid]] if gid in self.groups else (
                [] if gid else list(self.groups.values()))
            return [self._entity(multicast_group_entry=g) for g in items]
        if which == "clone_session_entry":
            sid = msg.clone_session_entry.session_id
            items = [self.sessions[sid]] if sid in self.sessions else (
                [] if sid else list(self.sessions.values()))
            return [self._entity(clone_session_entry=s) for s in items]
        raise invalid("Invalid PRE operation")

    def read_all(self) -> list[Entity]:
        return ([self._entity(multicast_group_entry=g) for g in self.groups.values()]
                + [self._entity(clone_session_entry=s) for s in self.sessions.values()])

    @staticmethod
    def _entity(**kw: Any) -> Entity:
        ent = Entity()
        ent.packet_replication_engine_entry.CopyFrom(
            p4runtime_pb2.PacketReplicationEngineEntry(**kw))
        return ent


class DigestCodec:
    """DigestEntry configuration, and digest lists for the primary controller's stream.

    Samples are batched per digest as the DigestEntry says: a list goes out when it holds
    `max_list_size` samples (0 = no limit) or `max_timeout_ns` after its first sample
    (0 = at once). Lists are not retransmitted, so acks (and ack_timeout_ns) change nothing.
    """

    def __init__(self, index: P4InfoIndex, state: Any):
        self.index = index
        self.digests = state.digests
        self.configs: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        self._list_id = 0
        self._sink: Callable[[p4runtime_pb2.StreamMessageResponse], Any] | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, list[tuple[int, ...]]] = {}

    def attach(self, sink: Callable[[p4runtime_pb2.StreamMessageResponse], Any]) -> None:
        self._sink = sink
        self.digests.sink = self._on_sample

    def _on_sample(self, name: str, values: tuple[int, ...]) -> None:
        settings = self.digests.settings(name)
        if settings is None:
            return
        with self._lock:
            batch = self._pending.setdefault(name, [])
            batch.append(values)
            full = 0 < settings.max_list_size <= len(batch)
            if not full and settings.max_timeout_ns > 0:
                if len(batch) == 1:
                    timer = threading.Timer(settings.max_timeout_ns / 1e9, self._flush, (name,))
                    timer.daemon = True
                    timer.start()
                return
        self._flush(name)

    def _flush(self, name: str) -> None:
        with self._lock:
            samples = self._pending.pop(name, [])
            if not samples or self._sink is None:
                return
            info = self.index.find("digests", name)
            if info is None:
                return
            self._list_id += 1
            msg = p4runtime_pb2.StreamMessageResponse()
            dl = msg.digest
            dl.digest_id, dl.list_id, dl.timestamp = info.preamble.id, self._list_id, time.time_ns()
            for values in samples:
                members = dl.data.add().struct.members
                for v in values:
                    members.add().bitstring = to_bytes(v)
        self._sink(msg)

    def write(self, kind: int, msg: p4runtime_pb2.DigestEntry) -> None:
        if self.index.kind(msg.digest_id) != "digests":
            raise invalid_id("digest", msg.digest_id)
        _check_update(kind)
        name = self.index.name(msg.digest_id)
        exists = msg.digest_id in self.configs
        if kind == Update.INSERT and exists:
            raise already_exists(f"digest {name} is already configured")
        if kind != Update.INSERT and not exists:
            raise not_found(f"digest {name} is not configured")
        if kind == Update.DELETE:
            self.digests.unconfigure(name)
            del self.configs[msg.digest_id]
            return
        c = msg.config
        self.digests.configure(name, c.max_list_size, c.max_timeout_ns, c.ack_timeout_ns)
        cfg = p4runtime_pb2.DigestEntry.Config()
        cfg.CopyFrom(c)
        self.configs[msg.digest_id] = cfg

    def read(self, msg: p4runtime_pb2.DigestEntry) -> list[Entity]:
        if msg.digest_id and self.index.kind(msg.digest_id) != "digests":
            raise invalid_id("digest", msg.digest_id)
        ids = [msg.digest_id] if msg.digest_id else list(self.configs)
        out = []
        for did in ids:
            if did in self.configs:
                ent = Entity()
                ent.digest_entry.digest_id = did
                ent.digest_entry.config.CopyFrom(self.configs[did])
                out.append(ent)
        return out


__all__ = ["CounterCodec", "DigestCodec", "MeterCodec", "PreCodec", "RuntimeApiError"]
