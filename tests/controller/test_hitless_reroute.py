"""A reroute never sends a prefix anywhere but its old or its new next hops, at any point of the
write sequence: the plan's group ids are adopted from what the switch holds
(`Intent.adopt_group_ids`, as `sync_switch` does)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2

from controller.fabric import FabricController
from controller.intent import Intent
from controller.pipeline import Pipeline
from controller.routes import SwitchRoutes, compute_routes
from controller.schema import Schema
from controller.state import DeviceState, add_read_entities, plan_updates
from targets import P4SWITCH, Capabilities
from tests.controller.routing_model import routing_p4info
from topos import build_fabric

INSERT, MODIFY, DELETE = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                          p4runtime_pb2.Update.DELETE)
group = "action_profile_group"


@pytest.fixture(scope="module")
def intent():
    return Intent(Schema(routing_p4info()))


def installed(intent: Intent, routes: SwitchRoutes) -> DeviceState:
    device = DeviceState()
    for batch in plan_updates(intent.state(routes), DeviceState()):
        add_read_entities(device, [u.entity for u in batch])
    return device


def forwarding(intent: Intent, device: DeviceState) -> dict[tuple, frozenset[int]]:
    """LPM match -> the egress ports its group holds on the device."""
    profile = intent.profile.preamble.id
    out = {}
    for (table, match, _prio), action in device.entries.items():
        if table == intent.lpm.preamble.id:
            members = device.groups.get((profile, action[1]), ())
            out[match] = frozenset(member_id for member_id, _w, _watch in members)
    return out


def misroutes(intent: Intent, old: SwitchRoutes, new: SwitchRoutes) -> list[str]:
    """Every (update, prefix) where the device sends the prefix to neither its old nor its new
    next hops, applying the planned updates one at a time."""
    device = installed(intent, old)
    allowed: dict[tuple, set[frozenset[int]]] = {}
    for routes in (old, new):
        for match, ports in forwarding(intent, installed(intent, routes)).items():
            allowed.setdefault(match, set()).add(ports)
    bad = []
    for batch in plan_updates(intent.state(new), device):
        for update in batch:
            if update.type == DELETE:
                gone = add_read_entities(DeviceState(), [update.entity])
                for part in ("members", "groups", "entries"):
                    for key in getattr(gone, part):
                        del getattr(device, part)[key]
            else:
                add_read_entities(device, [update.entity])
            for match, ports in forwarding(intent, device).items():
                if ports not in allowed[match]:
                    bad.append(f"{old.switch}: after {update.entity.WhichOneof('entity')} "
                               f"update, {match[0][2].hex()} -> ports {sorted(ports)}")
    return bad


def without(spec, link):
    live = copy.copy(spec)
    live.links = [ln for ln in spec.links if ln is not link]
    return live


def reroute(intent, spec, link, keep: bool):
    """(before, failed, restored) plans per switch, each numbered as the sync would number it
    on a switch holding the previous one (or freshly, without `keep`)."""
    before = compute_routes(spec)
    failed = compute_routes(without(spec, link))
    restored = compute_routes(spec)
    if keep:
        for name in before:
            failed[name] = intent.adopt_group_ids(failed[name], installed(intent, before[name]))
            restored[name] = intent.adopt_group_ids(restored[name],
                                                    installed(intent, failed[name]))
    return before, failed, restored


def switch_links(spec):
    return [ln for ln in spec.links if spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)]


# Group ids need not come back on restore: a shrunk group is a new group, which the restore grows
# in place (and in BiGraph a failure can merge two sets whose prefixes split again on restore).
@pytest.mark.parametrize("fabric", ["leafspine", "hpn7", "bigraph"])
def test_failing_and_restoring_any_link_never_misroutes_a_prefix(intent, fabric):
    spec = build_fabric(fabric)
    checked = 0
    for link in switch_links(spec):
        before, failed, restored = reroute(intent, spec, link, keep=True)
        for name in before:
            assert misroutes(intent, before[name], failed[name]) == []
            assert misroutes(intent, failed[name], restored[name]) == []
            assert restored[name].routes == before[name].routes
            assert set(restored[name].groups) == set(before[name].groups)
            checked += 1
    assert checked == len(switch_links(spec)) * len(spec.switches)


def test_fresh_numbering_would_misroute_during_the_rewrite(intent):
    """The check above can fail: without kept ids, leaf3's local hosts are briefly sent to the
    wrong port when leaf0's uplink fails (its groups are renumbered under live prefixes)."""
    spec = build_fabric("leafspine")
    link = next(ln for ln in spec.links if {ln.a.node, ln.b.node} == {"leaf0", "spine1"})
    before, failed, _ = reroute(intent, spec, link, keep=False)
    assert misroutes(intent, before["leaf3"], failed["leaf3"])


def test_a_shrinking_group_is_replaced_and_a_growing_one_rewritten_in_place(intent):
    spec = build_fabric("leafspine")
    link = next(ln for ln in spec.links if {ln.a.node, ln.b.node} == {"leaf0", "spine1"})
    before, failed, restored = reroute(intent, spec, link, keep=True)
    leaf0, leaf3 = (before["leaf0"], failed["leaf0"]), (before["leaf3"], failed["leaf3"])
    (uplinks_id,) = {g for hops, g in leaf0[0].groups.items() if len(hops) == 2}
    (spine0_id,) = {g for hops, g in leaf0[1].groups.items() if len(hops) == 1
                    and hops[0].neighbour == "spine0"}
    assert spine0_id != uplinks_id  # a new group; the prefixes move to it, then the old goes
    updates = [u for b in plan_updates(intent.state(leaf0[1]), installed(intent, leaf0[0]))
               for u in b]
    kinds = [(u.entity.WhichOneof("entity"), u.type) for u in updates]
    group, entry = "action_profile_group", "table_entry"
    assert kinds.index((group, INSERT)) < kinds.index((entry, MODIFY)) < kinds.index((group, DELETE))
    assert (group, MODIFY) not in kinds
    # restoring the link: the one-uplink group is unwatched (nothing to fail over to); growing
    # it in place would add a watch port to its member, so the restore writes a new group
    updates = [u for b in plan_updates(intent.state(restored["leaf0"]),
                                       installed(intent, leaf0[1])) for u in b]
    kinds = [(u.entity.WhichOneof("entity"), u.type) for u in updates]
    assert kinds.index((group, INSERT)) < kinds.index((entry, MODIFY)) < kinds.index((group, DELETE))
    # with a spare member (BMv2) the lowest port stays unwatched in both: grown in place, one
    # group write and nothing repointed
    bmv2 = Intent(Schema(routing_p4info()), caps=Capabilities(group_needs_live_member=True))
    before, failed, restored = reroute(bmv2, spec, link, keep=True)
    updates = [u for b in plan_updates(bmv2.state(restored["leaf0"]),
                                       installed(bmv2, failed["leaf0"])) for u in b]
    assert [(u.entity.WhichOneof("entity"), u.type) for u in updates
            if u.entity.WhichOneof("entity") != entry] == [("action_profile_member", INSERT),
                                                           (group, MODIFY)]
    assert all(u.entity.table_entry.table_id != bmv2.lpm.preamble.id for u in updates)
    # leaf3 still uses both spines for leaf1/2: the set for leaf0 is new and gets a free id
    new_ids = set(leaf3[1].groups.values()) - set(leaf3[0].groups.values())
    assert len(new_ids) == 1 and not new_ids & set(leaf3[0].groups.values())


def watched(members) -> dict[int, bytes]:
    return {member_id: watch for member_id, _w, watch in members}


@pytest.mark.parametrize(("fabric", "groups_grow"),
                         [("leafspine", True), ("hpn7", True), ("aipod", True), ("bigraph", False)])
@pytest.mark.parametrize("spare_member", [False, True])
def test_every_reroute_is_a_write_sequence_bmv2_takes(fabric, groups_grow, spare_member):
    """What PI on BMv2 cannot take (see controller.routes and controller.intent): a group MODIFY
    removing a member that has a watch port (the write fails), and, with `spare_member`, a group
    whose members all have watch ports (a packet hitting it with all those ports down kills the
    switch). A one-member group has no watch port on any target."""
    intent = Intent(Schema(routing_p4info()),
                    caps=Capabilities(group_needs_live_member=spare_member))
    profile = intent.profile.preamble.id
    spec = build_fabric(fabric)
    writes = 0
    for link in switch_links(spec):
        before, failed, restored = reroute(intent, spec, link, keep=True)
        for name in before:
            for old, new in ((before[name], failed[name]), (failed[name], restored[name])):
                device = installed(intent, old)
                for batch in plan_updates(intent.state(new), device):
                    for update in batch:
                        g = update.entity.action_profile_group
                        if update.type != MODIFY or not update.entity.HasField(group):
                            continue
                        writes += 1
                        was = watched(device.groups[(profile, g.group_id)])
                        now = {m.member_id: m.watch_port for m in g.members}
                        assert not [m for m in set(was) - set(now) if was[m]], (name, link)
                        assert all(now[m] == was[m] for m in was if m in now), (name, link)
                for members in intent.state(new).groups.values():
                    unwatched = [m for m, watch in watched(members).items() if not watch]
                    assert unwatched if (spare_member or len(members) == 1) else not unwatched
    # groups grow back in place only where the grown group keeps its members' watch ports: with
    # a spare member (the lowest port stays unwatched); without, a one-member group is unwatched
    # and its member would gain a watch port, so the restore writes a new group instead
    assert (writes > 0) == (groups_grow and spare_member)


def test_a_switch_already_in_place_is_left_alone_whatever_its_ids():
    """A controller that starts against switches rerouted by another one writes nothing."""
    intent = Intent(Schema(routing_p4info()), caps=Capabilities(group_needs_live_member=True))
    spec = build_fabric("leafspine")
    link = next(ln for ln in switch_links(spec) if {ln.a.node, ln.b.node} == {"leaf0", "spine1"})
    _, _, restored = reroute(intent, spec, link, keep=True)
    fresh = compute_routes(spec)["leaf0"]
    assert restored["leaf0"].groups != fresh.groups  # the switch holds other ids than fresh ones
    device = installed(intent, restored["leaf0"])
    assert plan_updates(intent.state(intent.adopt_group_ids(fresh, device)), device) == []


def test_a_switch_with_every_link_down_keeps_its_routes_for_when_it_comes_back():
    spec = build_fabric("hpn7")
    ctl = FabricController(spec, Pipeline(Path("routing.p4"), P4SWITCH, routing_p4info(), b""))
    whole = ctl.routes()
    tor = "ta-s0r0"
    for link in spec.links_of(tor):
        ctl.mark_link(tor, link.end(tor).port, up=False)
    failed = ctl.routes()
    assert failed[tor].routes == whole[tor].routes  # not emptied: it forwards once back
    # everybody else routes around it: no route of another switch leads into it
    assert all(hop.neighbour != tor for name, routes in failed.items() if name != tor
               for hops in routes.routes.values() for hop in hops)
    assert any(hop.neighbour == tor for routes in whole.values()
               for hops in routes.routes.values() for hop in hops)
