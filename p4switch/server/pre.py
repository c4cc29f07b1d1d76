"""Multicast groups and clone sessions (PacketReplicationEngineEntry)."""

from __future__ import annotations

from typing import Any, TypeAlias

from p4.v1 import p4runtime_pb2

from p4switch.runtime.errors import invalid
from p4switch.server.tables import port_from_bytes

Update = p4runtime_pb2.Update
Entity: TypeAlias = p4runtime_pb2.Entity


def check_update(kind: int) -> None:
    if kind not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise invalid("Update type is not set" if kind == Update.UNSPECIFIED
                      else "Invalid update type")


def _replicas(replicas, what: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind is None:
            raise invalid(f"Missing port in {what} replica")
        port = port_from_bytes(r.port) if kind == "port" else r.egress_port
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
        check_update(kind)
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
        check_update(kind)
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
