"""Action profile members and groups (action selectors), P4Runtime <-> runtime profiles."""

from __future__ import annotations

from typing import Any, TypeAlias

from p4.v1 import p4runtime_pb2

from p4switch.p4info.index import P4InfoIndex
from p4switch.runtime.errors import invalid, invalid_id
from p4switch.server.bytestrings import to_bytes
from p4switch.server.tables import ActionCodec, watch_port

Update = p4runtime_pb2.Update
Entity: TypeAlias = p4runtime_pb2.Entity


class ProfileCodec:
    def __init__(self, index: P4InfoIndex, state: Any, actions: ActionCodec):
        self.index, self.state, self.actions = index, state, actions

    def _profile(self, profile_id: int):
        if self.index.kind(profile_id) != "action_profiles":
            raise invalid_id("action profile", profile_id)
        return self.state.action_profiles[self.index.name(profile_id)]

    def _profiles(self, profile_id: int) -> list[tuple[int, Any]]:
        if profile_id == 0:
            return [(p.preamble.id, self.state.action_profiles[p.preamble.name])
                    for p in self.index.p4info.action_profiles]
        return [(profile_id, self._profile(profile_id))]

    # -- members ---------------------------------------------------------------------------
    def write_member(self, kind: int, msg: p4runtime_pb2.ActionProfileMember) -> None:
        profile = self._profile(msg.action_profile_id)
        if kind == Update.DELETE:
            profile.delete_member(msg.member_id)
        elif kind in (Update.INSERT, Update.MODIFY):
            call = self.actions.decode(msg.action)
            if kind == Update.INSERT:
                profile.insert_member(msg.member_id, call)
            else:
                profile.modify_member(msg.member_id, call)
        else:
            raise invalid("Update type is not set" if kind == Update.UNSPECIFIED
                          else "Invalid update type")

    def read_members(self, msg: p4runtime_pb2.ActionProfileMember) -> list[Entity]:
        out = []
        for pid, profile in self._profiles(msg.action_profile_id):
            members = profile.members()
            ids = [msg.member_id] if msg.member_id else sorted(members)
            for mid in ids:
                if mid not in members:
                    continue
                ent = Entity()
                m = ent.action_profile_member
                m.action_profile_id, m.member_id = pid, mid
                self.actions.encode(members[mid].action, m.action)
                out.append(ent)
        return out

    # -- groups ----------------------------------------------------------------------------
    def write_group(self, kind: int, msg: p4runtime_pb2.ActionProfileGroup) -> None:
        profile = self._profile(msg.action_profile_id)
        if kind == Update.DELETE:
            profile.delete_group(msg.group_id)
            return
        members = []
        for m in msg.members:
            if m.weight <= 0:
                raise invalid(f"group {msg.group_id}: member {m.member_id} has weight "
                              f"{m.weight}, weights must be > 0")
            members.append((m.member_id, m.weight, watch_port(m)))
        if kind == Update.INSERT:
            profile.insert_group(msg.group_id, members, msg.max_size)
        elif kind == Update.MODIFY:
            profile.modify_group(msg.group_id, members, msg.max_size)
        else:
            raise invalid("Update type is not set" if kind == Update.UNSPECIFIED
                          else "Invalid update type")

    def read_groups(self, msg: p4runtime_pb2.ActionProfileGroup) -> list[Entity]:
        out = []
        for pid, profile in self._profiles(msg.action_profile_id):
            groups = {gid: g for gid, g in profile.groups().items() if gid > 0}
            ids = [msg.group_id] if msg.group_id else sorted(groups)
            for gid in ids:
                group = groups.get(gid)
                if group is None:
                    continue
                ent = Entity()
                g = ent.action_profile_group
                g.action_profile_id, g.group_id, g.max_size = pid, gid, group.max_size
                for mid, (weight, watch) in sorted(group.members.items()):
                    gm = g.members.add(member_id=mid, weight=weight)
                    if watch is not None:
                        gm.watch_port = to_bytes(watch)
                out.append(ent)
        return out
