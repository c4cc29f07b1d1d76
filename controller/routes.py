"""Shortest-path ECMP routes from the fabric model.

For every switch and every host NIC, the next-hop set is every (egress port, neighbour MAC) that
starts a shortest path to that NIC. Paths run over switches only: a NIC never forwards, even when
it has two ports (HPN's dual-ToR NIC), so it can only be the last hop. Routes are /32 host routes
(the addressing plan puts every NIC in one /16, so there is nothing to aggregate per switch).

Next-hop sets are shared: prefixes whose sets are equal point at one action-selector group.
Member ids are P4 port numbers (a port has exactly one neighbour, so one next hop); group ids are
numbered 1.. in the order the sets are first used, walking the NICs in fabric order.

Those ids are what a fresh switch gets. On a switch that already holds groups, `keep_group_ids`
renumbers the plan after what the switch holds: an installed next-hop set keeps its id, and new
sets get ids no installed group has (or grow a group all of whose prefixes move to them), so a
reroute never changes a group's members under a prefix that should go elsewhere.

A group is never shrunk in place: a smaller set is a new group that the prefixes are repointed to
before the old group is deleted. Besides being make-before-break, that avoids a P4Runtime write
BMv2 cannot take: PI (p4lang/PI f96af95, `ActionProfAccessManual::group_update_members`) throws
std::out_of_range, answered as "UNKNOWN: Unexpected error in RPC handling", on a group MODIFY that
removes a member with a watch port.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from topos.model import FabricSpec


@dataclass(frozen=True, order=True)
class NextHop:
    """Leave through `port`, rewriting the destination MAC to `mac` (the far end's MAC)."""

    port: int
    mac: str
    neighbour: str


@dataclass
class SwitchRoutes:
    """Everything the controller installs on one switch."""

    switch: str
    device_id: int
    routes: dict[str, tuple[NextHop, ...]] = field(default_factory=dict)  # "a.b.c.d/32" -> hops
    groups: dict[tuple[NextHop, ...], int] = field(default_factory=dict)  # hop set -> group id
    source_macs: dict[int, str] = field(default_factory=dict)  # port -> the port's own MAC
    hash_seed: int = 0

    def members(self) -> dict[int, NextHop]:
        """Member id (= port) -> next hop, for every next hop any group uses."""
        return {hop.port: hop for hops in self.groups for hop in hops}

    def group_of(self, prefix: str) -> int:
        return self.groups[self.routes[prefix]]


SEED_SHIFT_STEP = 5  # bits between the hash windows of consecutive tiers


def default_hash_seed(switch: str, tier: int = 1) -> int:
    """A per-switch 16-bit selector seed, stable across runs.

    `p4src/include/routing.p4` takes seed[3:0] as the shift selecting which 16 bits of the 32-bit
    flow hash the switch uses (CRCs are linear, so only different bits decorrelate two ECMP
    stages); the shift differs per tier, so the stages along a path never share hash bits. The
    upper 12 bits (XORed into the key) come from the switch name.
    """
    shift = ((tier - 1) * SEED_SHIFT_STEP) % 16
    return (zlib.crc32(switch.encode()) & 0xFFF0) | shift


def switch_distances(spec: FabricSpec, sources: list[str]) -> dict[str, int]:
    """Hop counts over switch-to-switch links from the nearest of `sources` (multi-source BFS)."""
    dist = {s: 0 for s in sources}
    todo = deque(sources)
    while todo:
        node = todo.popleft()
        for link in spec.links_of(node):
            far = link.other(node).node
            if far not in dist and spec.is_switch(far):
                dist[far] = dist[node] + 1
                todo.append(far)
    return dist


def next_hops_to_nic(spec: FabricSpec, switch: str, nic: str,
                     dist: dict[str, int]) -> tuple[NextHop, ...]:
    """The next hops from `switch` towards `nic`, given switch distances to the NIC's switches."""
    if switch not in dist:
        return ()
    here = dist[switch]
    hops = []
    for link in spec.links_of(switch):
        far = link.other(switch)
        to_nic = here == 0 and far.node == nic
        downhill = here > 0 and dist.get(far.node) == here - 1 and spec.is_switch(far.node)
        if to_nic or downhill:
            hops.append(NextHop(link.end(switch).port, far.mac, far.node))
    return tuple(sorted(hops))


def compute_routes(spec: FabricSpec, *, hash_seed: int | None = None) -> dict[str, SwitchRoutes]:
    """Routes for every switch of `spec`, by switch name.

    `hash_seed` gives every switch the same selector seed (to demonstrate hash polarisation);
    by default each switch gets its own (`default_hash_seed`).
    """
    plan = {
        sw.name: SwitchRoutes(
            switch=sw.name, device_id=sw.device_id,
            hash_seed=(default_hash_seed(sw.name, sw.tier) if hash_seed is None
                       else hash_seed & 0xFFFF),
            source_macs={ln.end(sw.name).port: ln.end(sw.name).mac
                         for ln in spec.links_of(sw.name)},
        )
        for sw in spec.switches
    }
    for nic in spec.host_nics():
        attached = sorted({sw for sw, _port in spec.attachments(nic.name)})
        dist = switch_distances(spec, attached)
        prefix = f"{nic.ip}/32"
        for name, routes in plan.items():
            hops = next_hops_to_nic(spec, name, nic.name, dist)
            if not hops:
                continue
            routes.routes[prefix] = hops
            routes.groups.setdefault(hops, len(routes.groups) + 1)
    return plan


PortSet = tuple[int, ...]  # a next-hop set by its egress ports (sorted)


def port_set(hops: tuple[NextHop, ...]) -> PortSet:
    return tuple(sorted(hop.port for hop in hops))


def grows(old: PortSet, new: PortSet) -> bool:
    """Whether a group holding `old` may be rewritten to `new` in place."""
    return set(new) >= set(old)


def keep_group_ids(routes: SwitchRoutes, installed: dict[int, PortSet],
                   pointed: dict[str, PortSet],
                   grows: Callable[[PortSet, PortSet], bool] = grows) -> None:
    """Renumber `routes.groups` in place so that rewriting a switch to `routes` is hitless.

    `installed` is the switch's groups (id -> next-hop ports), `pointed` the ports each of the
    plan's prefixes uses on the switch now. A set already installed keeps its id. A new set takes
    over the id of an installed set that goes away when every prefix using that set moves to the
    new one and `grows(old, new)` allows it (by default when the new set holds all of the old
    one's ports: a growing ECMP group, one group write that only adds members, no prefix
    repointed). Any other new set, a shrunk one included, gets its fresh id if no installed group
    has it, else the lowest such id."""
    if not installed:
        return
    id_of: dict[PortSet, int] = {}
    for gid, ports in sorted(installed.items()):
        id_of.setdefault(ports, gid)
    wanted = {port_set(hops) for hops in routes.groups}
    ids = {hops: id_of[port_set(hops)] for hops in routes.groups if port_set(hops) in id_of}
    movers: dict[PortSet, set[tuple[NextHop, ...]]] = {}
    for prefix, old in pointed.items():
        if old not in wanted and old in id_of and prefix in routes.routes:
            movers.setdefault(old, set()).add(routes.routes[prefix])
    for old in sorted(movers, key=id_of.__getitem__):
        heir, *others = movers[old]
        if not others and heir not in ids and grows(old, port_set(heir)):
            ids[heir] = id_of[old]
    taken = set(installed)
    for hops, fresh in routes.groups.items():
        if hops in ids:
            continue
        gid = fresh
        if gid in taken:
            gid = 1
            while gid in taken:
                gid += 1
        ids[hops] = gid
        taken.add(gid)
    routes.groups = {hops: ids[hops] for hops in routes.groups}
