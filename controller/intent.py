"""What one switch should hold, as a `DeviceState`, from its routes and the program's P4Info.

Table, action and field names are those of `mechanisms.routing` and `mechanisms.port_io`
(`RoutingNames`); ids come from the P4Info.
Members: one per next hop, member id = egress port, action set_next_hop(port, dmac). Groups: one
per next-hop set, each member with weight 1 and watch_port = its egress port, so the selector
skips a member while its port is down (data-plane failover). A group of one member has no watch
port: there is nothing to fail over to. On BMv2 (`Capabilities.group_needs_live_member`), the lowest port of every group
is not watched either, so a group always keeps a live member: PI's selector on BMv2 divides by
zero when a packet hits a group whose members are all deactivated (p4lang/behavioral-model
9674187f, `PI/src/group_selection.cpp`, `GroupInfo::get_from_hash`) and the switch dies. That
member's failure is then repaired by the controller's reroute. LPM entries: every /32 route points
at its group.
Source MACs: egress port -> the port's own MAC. The hash-seed table's default action carries the
switch's seed.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller.routes import PortSet, SwitchRoutes, keep_group_ids
from controller.schema import Schema, decode, encode, mac_to_int
from controller.state import DeviceState
from mechanisms import port_io, routing
from targets import P4SWITCH, Capabilities


@dataclass(frozen=True)
class RoutingNames:
    """Names of what the controller programs, as p4c writes them in the P4Info."""

    lpm_table: str = routing.LPM_TABLE
    lpm_field: str = routing.LPM_FIELD
    next_hop_action: str = routing.NEXT_HOP_ACTION
    seed_table: str = routing.SEED_TABLE
    seed_action: str = routing.SEED_ACTION
    source_mac_table: str = port_io.SOURCE_MAC_TABLE
    source_mac_field: str = port_io.SOURCE_MAC_FIELD
    source_mac_action: str = port_io.SOURCE_MAC_ACTION
    rx_counter: str = port_io.RX_PORT_COUNTER
    tx_counter: str = port_io.TX_PORT_COUNTER


DEFAULT_NAMES = RoutingNames()


class Intent:
    """Turns `SwitchRoutes` into a `DeviceState` for one P4Info."""

    def __init__(self, schema: Schema, names: RoutingNames = DEFAULT_NAMES, *,
                 caps: Capabilities = P4SWITCH.caps):
        self.schema, self.names, self.caps = schema, names, caps
        s, n = schema, names
        self.lpm = s.table(n.lpm_table)
        self.lpm_field = s.match_field(n.lpm_table, n.lpm_field)
        self.profile = s.profile_of(n.lpm_table)
        self.next_hop = s.action(n.next_hop_action)
        self.nh_port = s.param(n.next_hop_action, "port")
        self.nh_dmac = s.param(n.next_hop_action, "dmac")
        self.seed_table = s.table(n.seed_table)
        self.seed_action = s.action(n.seed_action)
        self.seed_param = s.param(n.seed_action, "seed")
        self.smac_table = s.table(n.source_mac_table)
        self.smac_field = s.match_field(n.source_mac_table, n.source_mac_field)
        self.smac_action = s.action(n.source_mac_action)
        self.smac_param = s.param(n.source_mac_action, "mac")

    def owned_tables(self) -> list[int]:
        """Tables whose entries the controller owns (stale entries there are deleted)."""
        return [self.lpm.preamble.id, self.smac_table.preamble.id]

    def read_entities(self) -> list[p4runtime_pb2.Entity]:
        """Wildcard reads covering everything `state()` describes."""
        out = []
        for table_id in self.owned_tables():
            entity = p4runtime_pb2.Entity()
            entity.table_entry.table_id = table_id
            out.append(entity)
        for kind in ("action_profile_member", "action_profile_group"):
            entity = p4runtime_pb2.Entity()
            getattr(entity, kind).action_profile_id = self.profile.preamble.id
            out.append(entity)
        return out

    def default_read_entity(self) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = self.seed_table.preamble.id
        entity.table_entry.is_default_action = True
        return entity

    def route_key(self, prefix: str) -> tuple:
        """The `DeviceState.entries` key of a prefix's LPM entry."""
        net = ipaddress.IPv4Network(prefix)
        match = ((self.lpm_field.id, "lpm",
                  encode(int(net.network_address), self.lpm_field.bitwidth, "prefix"),
                  net.prefixlen),)
        return (self.lpm.preamble.id, match, 0)

    def adopt_group_ids(self, routes: SwitchRoutes, have: DeviceState) -> SwitchRoutes:
        """`routes` with group ids renumbered after the groups the device holds, so that the
        rewrite from `have` is make-before-break (`controller.routes.keep_group_ids`)."""
        profile_id = self.profile.preamble.id
        installed: dict[int, PortSet] = {
            gid: tuple(sorted(member_id for member_id, _w, _watch in members))
            for (pid, gid), members in have.groups.items() if pid == profile_id}
        pointed: dict[str, PortSet] = {}
        for prefix in routes.routes:
            entry = have.entries.get(self.route_key(prefix))
            if entry and entry[0] == "group" and entry[1] in installed:
                pointed[prefix] = installed[entry[1]]
        adopted = copy.copy(routes)
        keep_group_ids(adopted, installed, pointed, self.grows_in_place)
        return adopted

    def grows_in_place(self, old: PortSet, new: PortSet) -> bool:
        """A group is rewritten in place only by adding members: every member it keeps keeps its
        watch port. PI on BMv2 cannot take the other changes: removing a watched member
        (`controller.routes`), or adding a watch port to a member whose port is up (the
        WatchPortEnforcer activates the already active member and answers INTERNAL)."""
        if not set(new) >= set(old):
            return False
        return self.unwatched(old) == self.unwatched(new) & set(old)

    def unwatched(self, ports: Iterable[int]) -> set[int]:
        """The members (= egress ports) of a group with these ports that get no watch port."""
        ports = sorted(ports)
        if len(ports) == 1 or self.caps.group_needs_live_member:
            return set(ports[:1])
        return set()

    def readable(self, have: DeviceState) -> DeviceState:
        """`have` as read from the device, with the watch ports its reads cannot be trusted for
        (`Capabilities.group_reads_lose_watch_ports`) taken to be what this intent writes for
        the same members: only membership and weights are then compared."""
        if not self.caps.group_reads_lose_watch_ports:
            return have
        width = self.nh_port.bitwidth
        for key, members in have.groups.items():
            unwatched = self.unwatched(m for m, _w, _watch in members)
            have.groups[key] = tuple(
                (m, w, b"" if m in unwatched else encode(m, width, "watch port"))
                for m, w, _watch in members)
        return have

    def state(self, routes: SwitchRoutes) -> DeviceState:
        state = DeviceState()
        profile_id = self.profile.preamble.id
        port_width = self.nh_port.bitwidth
        for member_id, hop in routes.members().items():
            state.members[(profile_id, member_id)] = (self.next_hop.preamble.id, (
                (self.nh_port.id, encode(hop.port, port_width, "port")),
                (self.nh_dmac.id, encode(mac_to_int(hop.mac), self.nh_dmac.bitwidth, "MAC"))))
        max_size = self.profile.max_group_size or max(
            [len(hops) for hops in routes.groups] + [len(routes.source_macs)])
        for hops, group_id in routes.groups.items():
            key = (profile_id, group_id)
            unwatched = self.unwatched(hop.port for hop in hops)
            state.groups[key] = tuple(sorted(
                (hop.port, 1,
                 b"" if hop.port in unwatched else encode(hop.port, port_width, "watch port"))
                for hop in hops))
            state.group_sizes[key] = max_size
        for prefix, hops in routes.routes.items():
            state.entries[self.route_key(prefix)] = ("group", routes.groups[hops])
        for port, mac in routes.source_macs.items():
            match = ((self.smac_field.id, "exact",
                      encode(port, self.smac_field.bitwidth, "port")),)
            state.entries[(self.smac_table.preamble.id, match, 0)] = (
                "action", self.smac_action.preamble.id,
                ((self.smac_param.id, encode(mac_to_int(mac), self.smac_param.bitwidth, "MAC")),))
        state.defaults[self.seed_table.preamble.id] = (
            "action", self.seed_action.preamble.id,
            ((self.seed_param.id, encode(routes.hash_seed, self.seed_param.bitwidth, "seed")),))
        return state


def describe_update(schema: Schema, update: p4runtime_pb2.Update) -> str:
    """One line naming the update in P4 terms, for error messages."""
    verb = p4runtime_pb2.Update.Type.Name(update.type)
    entity = update.entity
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        e = entity.table_entry
        table = schema.name_of(e.table_id)
        if e.is_default_action:
            return f"{verb} default action of {table}"
        fields = []
        for fm in e.match:
            name = schema.field_name(e.table_id, fm.field_id)
            which = fm.WhichOneof("field_match_type")
            if which == "lpm":
                value = decode(fm.lpm.value)
                shown = (str(ipaddress.IPv4Address(value)) if value < 1 << 32 else hex(value))
                fields.append(f"{name}={shown}/{fm.lpm.prefix_len}")
            else:
                fields.append(f"{name}={decode(getattr(fm, which).value):#x}")
        target = e.action.WhichOneof("type") or "no action"
        return f"{verb} {table} entry {' '.join(fields) or '(no key)'} -> {target}"
    if kind == "action_profile_member":
        m = entity.action_profile_member
        return f"{verb} member {m.member_id} of {schema.name_of(m.action_profile_id)}"
    if kind == "action_profile_group":
        g = entity.action_profile_group
        members = ",".join(str(m.member_id) for m in g.members)
        return (f"{verb} group {g.group_id} of {schema.name_of(g.action_profile_id)} "
                f"(members {members or 'none'})")
    return f"{verb} {kind}"
