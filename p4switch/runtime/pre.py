"""Packet replication engine: multicast groups and clone (mirroring) sessions.

The model is BMv2's `simple_pre` as simple_switch uses it: a multicast group is a list of L1
nodes in association order; a node has a replication id (rid) and a set of ports; a packet
multicast to the group gets one copy per (node, port), ports ascending within a node.
P4Runtime multicast groups are laid onto nodes as PI does it: one node per distinct instance
(rid), created in ascending rid order; MODIFY keeps the nodes of rids that stay (in place),
appends nodes for new rids and removes the others.

Clone sessions: the BMv2 CLI's `mirroring_add` (one egress port) / `mirroring_add_mc` (a
multicast group), or P4Runtime CloneSessionEntry replicas (PI: a hidden multicast group).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from p4switch.runtime.errors import already_exists, invalid, not_found, out_of_range, unimplemented
from p4switch.runtime.handles import HandleAllocator

MAX_P4RT_GROUP_ID = (1 << 15) - 1  # PI reserves ids from 1 << 15 for clone sessions
MAX_CLONE_SESSION_ID = 32767
PORT_MAP_SIZE = 512  # BMv2's PRE port maps hold ports 0..511


@dataclass
class McNode:
    handle: int
    rid: int
    ports: set[int]
    mgrp: int | None = None  # associated multicast group


@dataclass
class CloneSession:
    session_id: int
    egress_port: int | None = None
    mc_group: int | None = None
    replicas: tuple[tuple[int, int], ...] = ()  # P4Runtime (port, instance), replication order
    class_of_service: int = 0
    packet_length_bytes: int = 0  # 0 = no truncation


@dataclass
class _P4rtGroup:
    nodes: dict[int, int] = field(default_factory=dict)  # rid -> node handle


class PacketReplicationEngine:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._mgrps: dict[int, list[int]] = {}  # mgid -> node handles in association order
        self._nodes: dict[int, McNode] = {}
        self._node_handles = HandleAllocator()
        self._p4rt: dict[int, _P4rtGroup] = {}
        self._sessions: dict[int, CloneSession] = {}
        self._cache: dict[int, list[tuple[int, int]]] = {}

    # ---- the hot path ------------------------------------------------------------------------

    def replicas(self, group: int) -> list[tuple[int, int]]:
        """(egress port, rid) copies for a multicast group, in BMv2's order; [] if unknown."""
        cached = self._cache.get(group)
        if cached is None:
            cached = []
            for handle in self._mgrps.get(group, ()):
                node = self._nodes[handle]
                cached.extend((port, node.rid) for port in sorted(node.ports))
            self._cache[group] = cached
        return cached

    def clone_session(self, session: int) -> CloneSession | None:
        return self._sessions.get(session)

    def clone_targets(self, session: int) -> list[tuple[int, int]] | None:
        """(egress port, rid) copies a clone to this session makes; None if no such session."""
        s = self._sessions.get(session)
        if s is None:
            return None
        out: list[tuple[int, int]] = []
        if s.egress_port is not None:
            out.append((s.egress_port, 0))
        if s.mc_group is not None:
            out.extend(self.replicas(s.mc_group))
        out.extend(s.replicas)
        return out

    # ---- BMv2 CLI style ----------------------------------------------------------------------

    def mc_mgrp_create(self, mgid: int) -> int:
        _check_u16(mgid, "multicast group id")
        self._mgrps.setdefault(mgid, [])
        self._cache.clear()
        return mgid

    def mc_mgrp_destroy(self, mgid: int) -> None:
        """Destroy a group (its nodes stay, dissociated); unknown groups are ignored, as in
        BMv2."""
        handles = self._mgrps.pop(mgid, [])
        for handle in handles:
            self._nodes[handle].mgrp = None
        self._p4rt.pop(mgid, None)
        self._cache.clear()

    def mc_node_create(self, rid: int, ports: Iterable[int]) -> int:
        _check_u16(rid, "rid")
        handle = self._node_handles.get()
        self._nodes[handle] = McNode(handle, rid, _ports(ports))
        return handle

    def mc_node_update(self, handle: int, ports: Iterable[int]) -> None:
        self._node(handle).ports = _ports(ports)
        self._cache.clear()

    def mc_node_associate(self, mgid: int, handle: int) -> None:
        node = self._node(handle)
        self._mgrp(mgid)
        if node.mgrp is not None:
            raise invalid(f"node {handle} is already associated with group {node.mgrp}")
        self._mgrps[mgid].append(handle)
        node.mgrp = mgid
        self._cache.clear()

    def mc_node_dissociate(self, mgid: int, handle: int) -> None:
        node = self._node(handle)
        self._mgrp(mgid)
        if node.mgrp != mgid:
            raise invalid(f"node {handle} is not associated with group {mgid}")
        self._mgrps[mgid].remove(handle)
        node.mgrp = None
        self._cache.clear()

    def mc_node_destroy(self, handle: int) -> None:
        node = self._node(handle)
        if node.mgrp is not None:
            self._mgrps[node.mgrp].remove(handle)
        del self._nodes[handle]
        self._node_handles.release(handle)
        self._cache.clear()

    def mgrps(self) -> dict[int, list[int]]:
        return {mgid: list(h) for mgid, h in sorted(self._mgrps.items())}

    def nodes(self) -> dict[int, McNode]:
        return dict(sorted(self._nodes.items()))

    def _mgrp(self, mgid: int) -> int:
        if mgid not in self._mgrps:
            raise not_found(f"invalid multicast group handle {mgid}")
        return mgid

    def _node(self, handle: int) -> McNode:
        node = self._nodes.get(handle)
        if node is None:
            raise not_found(f"invalid multicast node handle {handle}")
        return node

    def mirroring_add(self, session: int, egress_port: int) -> None:
        self._sessions[session] = CloneSession(session, egress_port=egress_port)

    def mirroring_add_mc(self, session: int, mgid: int) -> None:
        self._sessions[session] = CloneSession(session, mc_group=mgid)

    def mirroring_delete(self, session: int) -> None:
        if self._sessions.pop(session, None) is None:
            raise not_found(f"no mirroring session {session}")

    # ---- P4Runtime style ---------------------------------------------------------------------

    def insert_multicast_group(self, group_id: int, replicas: Iterable[tuple[int, int]]) -> None:
        _check_p4rt_group(group_id)
        by_rid = _by_rid(replicas)
        if group_id in self._p4rt or group_id in self._mgrps:
            raise already_exists(f"multicast group {group_id} already exists")
        self.mc_mgrp_create(group_id)
        group = self._p4rt[group_id] = _P4rtGroup()
        for rid, ports in sorted(by_rid.items()):
            group.nodes[rid] = handle = self.mc_node_create(rid, ports)
            self.mc_node_associate(group_id, handle)

    def modify_multicast_group(self, group_id: int, replicas: Iterable[tuple[int, int]]) -> None:
        _check_p4rt_group(group_id)
        by_rid = _by_rid(replicas)
        group = self._p4rt.get(group_id)
        if group is None:
            raise not_found(f"multicast group {group_id} does not exist")
        old = dict(group.nodes)
        group.nodes = {}
        for rid, ports in sorted(by_rid.items()):
            if rid in old:
                group.nodes[rid] = handle = old.pop(rid)
                self.mc_node_update(handle, ports)
            else:
                group.nodes[rid] = handle = self.mc_node_create(rid, ports)
                self.mc_node_associate(group_id, handle)
        for handle in old.values():
            self.mc_node_destroy(handle)

    def delete_multicast_group(self, group_id: int) -> None:
        _check_p4rt_group(group_id)
        group = self._p4rt.get(group_id)
        if group is None:
            raise not_found(f"multicast group {group_id} does not exist")
        for handle in group.nodes.values():
            self.mc_node_destroy(handle)
        self.mc_mgrp_destroy(group_id)

    def set_multicast_group(self, group_id: int, replicas: Iterable[tuple[int, int]]) -> None:
        """Insert or replace a P4Runtime multicast group."""
        if group_id in self._p4rt:
            self.modify_multicast_group(group_id, replicas)
        else:
            self.insert_multicast_group(group_id, replicas)

    def multicast_groups(self) -> dict[int, list[tuple[int, int]]]:
        """P4Runtime groups: id -> [(port, instance)]."""
        return {gid: self.replicas(gid) for gid in sorted(self._p4rt)}

    def insert_clone_session(self, session: int, replicas: Iterable[tuple[int, int]],
                             class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        new = self._p4rt_session(session, replicas, class_of_service, packet_length_bytes)
        if session in self._sessions:
            raise already_exists(f"clone session {session} already exists")
        self._sessions[session] = new

    def modify_clone_session(self, session: int, replicas: Iterable[tuple[int, int]],
                             class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        new = self._p4rt_session(session, replicas, class_of_service, packet_length_bytes)
        if session not in self._sessions:
            raise not_found(f"clone session {session} does not exist")
        self._sessions[session] = new

    def delete_clone_session(self, session: int) -> None:
        _check_session(session)
        if self._sessions.pop(session, None) is None:
            raise not_found(f"clone session {session} does not exist")

    def set_clone_session(self, session: int, replicas: Iterable[tuple[int, int]],
                          class_of_service: int = 0, packet_length_bytes: int = 0) -> None:
        """Insert or replace a P4Runtime clone session."""
        self._sessions[session] = self._p4rt_session(session, replicas, class_of_service,
                                                     packet_length_bytes)

    def clone_sessions(self) -> dict[int, CloneSession]:
        return dict(sorted(self._sessions.items()))

    def _p4rt_session(self, session: int, replicas, cos: int, plen: int) -> CloneSession:
        _check_session(session)
        by_rid = _by_rid(replicas)
        if cos != 0:
            raise unimplemented("class_of_service for clone sessions is not supported")
        if plen != 0:
            raise unimplemented("clone session truncation (packet_length_bytes) is not "
                                "supported by BMv2")
        ordered = tuple((port, rid) for rid in sorted(by_rid) for port in sorted(by_rid[rid]))
        return CloneSession(session, replicas=ordered, class_of_service=cos,
                            packet_length_bytes=plen)


def _check_u16(value: int, what: str) -> None:
    if not isinstance(value, int) or not 0 <= value < 1 << 16:
        raise invalid(f"{what} {value!r} is not a 16-bit value")


def _check_port(port: int, what: str = "port") -> None:
    if not isinstance(port, int) or not 0 <= port < PORT_MAP_SIZE:
        raise invalid(f"invalid {what} {port!r}: the replication engine handles ports "
                      f"0..{PORT_MAP_SIZE - 1}")


def _ports(ports: Iterable[int]) -> set[int]:
    out = set()
    for port in ports:
        _check_port(port)
        out.add(port)
    return out


def _check_p4rt_group(group_id: int) -> None:
    if group_id == 0:
        raise invalid("0 is not a valid multicast group id")
    if not isinstance(group_id, int) or group_id < 0:
        raise invalid(f"invalid multicast group id {group_id!r}")
    if group_id > MAX_P4RT_GROUP_ID:
        raise out_of_range(f"multicast group id {group_id} is too high "
                           f"(max {MAX_P4RT_GROUP_ID})")


def _check_session(session: int) -> None:
    if session == 0:
        raise invalid("0 is not a valid clone session id")
    if not isinstance(session, int) or not 1 <= session <= MAX_CLONE_SESSION_ID:
        raise invalid(f"clone session id {session!r} out of range 1..{MAX_CLONE_SESSION_ID}")


def _by_rid(replicas: Iterable[tuple[int, int]]) -> dict[int, set[int]]:
    by_rid: dict[int, set[int]] = {}
    for replica in replicas:
        port, rid = replica
        _check_u16(rid, "replica instance")
        _check_port(port, "replica port")
        ports = by_rid.setdefault(rid, set())
        if port in ports:
            raise invalid(f"duplicate replica (port {port}, instance {rid})")
        ports.add(port)
    return by_rid
