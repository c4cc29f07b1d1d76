"""Write and Read of every P4Runtime entity, dispatched to one codec per entity family (the
stateful externs' entities to their modules in `p4switch.externs`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.cpmodel import ControlPlaneModel
from p4switch.externs import ENTITIES, ExternCodec
from p4switch.p4info.index import P4InfoIndex
from p4switch.runtime.errors import RuntimeApiError, unimplemented
from p4switch.server.digests import DigestCodec
from p4switch.server.pre import PreCodec
from p4switch.server.profiles import ProfileCodec
from p4switch.server.tables import ActionCodec, TableCodec


class EntityCodec:
    """Applies Updates to, and reads Entities from, one pipeline's runtime state."""

    def __init__(self, p4info: p4info_pb2.P4Info, index: P4InfoIndex, model: ControlPlaneModel,
                 state: Any):
        self.p4info = p4info
        self.state = state
        actions = ActionCodec(index)
        self.tables = TableCodec(index, state, actions)
        self.profiles = ProfileCodec(index, state, actions)
        self.externs = ExternCodec(index, state, self.tables)
        self.pre = PreCodec(state)
        self.digests = DigestCodec(index, state)

    def attach_digests(self, sink: Callable[[p4runtime_pb2.StreamMessageResponse], Any]) -> None:
        self.digests.attach(sink)

    def write(self, update: p4runtime_pb2.Update) -> None:
        entity, kind = update.entity, update.type
        which = entity.WhichOneof("entity")
        if which == "table_entry":
            self.tables.write(kind, entity.table_entry)
        elif which == "action_profile_member":
            self.profiles.write_member(kind, entity.action_profile_member)
        elif which == "action_profile_group":
            self.profiles.write_group(kind, entity.action_profile_group)
        elif which in ENTITIES:
            ENTITIES[which].write(self.externs, kind, getattr(entity, which))
        elif which == "packet_replication_engine_entry":
            self.pre.write(kind, entity.packet_replication_engine_entry)
        elif which == "digest_entry":
            self.digests.write(kind, entity.digest_entry)
        elif which == "value_set_entry":
            raise unimplemented("ValueSet writes are not supported yet")
        elif which == "extern_entry":
            raise unimplemented("Extern writes are not supported")
        else:
            raise RuntimeApiError("INVALID_ARGUMENT", "Incorrect entity type")

    def read(self, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        which = entity.WhichOneof("entity")
        if which == "table_entry":
            return self.tables.read(entity.table_entry)
        if which == "action_profile_member":
            return self.profiles.read_members(entity.action_profile_member)
        if which == "action_profile_group":
            return self.profiles.read_groups(entity.action_profile_group)
        if which in ENTITIES:
            return ENTITIES[which].read(self.externs, getattr(entity, which))
        if which == "packet_replication_engine_entry":
            return self.pre.read(entity.packet_replication_engine_entry)
        if which == "digest_entry":
            return self.digests.read(entity.digest_entry)
        if which == "value_set_entry":
            raise unimplemented("ValueSet reads are not supported yet")
        raise RuntimeApiError("INVALID_ARGUMENT", "Incorrect entity type")

    def snapshot(self) -> list[p4runtime_pb2.Entity]:
        """The forwarding state as entities to INSERT, in dependency order (for reconcile)."""
        out: list[p4runtime_pb2.Entity] = []
        out += self.profiles.read_members(p4runtime_pb2.ActionProfileMember())
        out += self.profiles.read_groups(p4runtime_pb2.ActionProfileGroup())
        out += self.tables.read(p4runtime_pb2.TableEntry())
        out += self.pre.read_all()
        out += self.digests.read(p4runtime_pb2.DigestEntry())
        return out
