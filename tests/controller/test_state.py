"""Intended state from routes, the write plan, and its round trip through P4Runtime messages."""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2

from controller.intent import Intent, describe_update
from controller.routes import compute_routes
from controller.schema import Schema, SchemaError, encode
from controller.state import DeviceState, add_read_entities, plan_updates
from tests.controller.routing_model import routing_p4info
from topos import build_fabric

INSERT, MODIFY, DELETE = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                          p4runtime_pb2.Update.DELETE)


@pytest.fixture(scope="module")
def intent():
    return Intent(Schema(routing_p4info()))


def apply(device: DeviceState, batches) -> DeviceState:
    """What a device holds after the batches: the test's stand-in for a switch's tables."""
    for batch in batches:
        for update in batch:
            if update.type == DELETE:
                gone = DeviceState()
                add_read_entities(gone, [update.entity])
                for part in ("members", "groups", "entries"):
                    for key in getattr(gone, part):
                        del getattr(device, part)[key]
            else:
                add_read_entities(device, [update.entity])
    return device


def test_state_holds_members_groups_routes_macs_and_seed(intent):
    spec = build_fabric("leafspine")
    routes = compute_routes(spec)["leaf0"]
    state = intent.state(routes)
    assert len(state.members) == len(routes.members()) == 4  # 2 hosts + 2 spines
    assert len(state.groups) == len(routes.groups) == 3      # host A, host B, both spines
    assert len(state.entries) == len(routes.routes) + len(routes.source_macs)
    (seed_action,) = state.defaults.values()
    assert seed_action[2][0][1] == encode(routes.hash_seed, 16)
    for members in state.groups.values():
        for member_id, weight, watch in members:
            # watch_port = egress port, except in a one-member group (nothing to fail over to)
            assert weight == 1 and watch == (b"" if len(members) == 1 else encode(member_id, 9))


def test_fresh_device_gets_everything_in_dependency_order(intent):
    routes = compute_routes(build_fabric("hpn7"))["ta-s0r0"]
    want = intent.state(routes)
    batches = plan_updates(want, DeviceState())
    kinds = [[u.entity.WhichOneof("entity") for u in b] for b in batches]
    assert set(kinds[0]) == {"action_profile_member"}
    assert set(kinds[1]) == {"action_profile_group"}
    assert set(kinds[2]) == {"table_entry"}
    assert sum(map(len, batches)) == want.count()
    # the round trip through protobufs reproduces the state exactly: a re-run writes nothing
    device = apply(DeviceState(), batches)
    assert device.members == want.members and device.groups == want.groups
    assert device.entries == want.entries and device.defaults == want.defaults
    assert plan_updates(want, device) == []


def test_after_a_link_failure_only_the_difference_is_written(intent):
    spec = build_fabric("leafspine")
    before = compute_routes(spec)["leaf0"]
    device = apply(DeviceState(), plan_updates(intent.state(before), DeviceState()))
    spec.links = [ln for ln in spec.links if {ln.a.node, ln.b.node} != {"leaf0", "spine1"}]
    after = compute_routes(spec)["leaf0"]
    batches = plan_updates(intent.state(after), device)
    updates = [u for b in batches for u in b]
    # the two-spine group shrinks to spine0; the member and source MAC of the port to spine1 go
    kinds = [(u.type, u.entity.WhichOneof("entity")) for u in updates]
    assert kinds == [(MODIFY, "action_profile_group"), (DELETE, "table_entry"),
                     (DELETE, "action_profile_member")]
    assert [m.member_id for m in updates[0].entity.action_profile_group.members] == [
        spec.port_to("leaf0", "spine0")]
    assert updates[1].entity.table_entry.match[0].exact.value == encode(4, 9)
    assert updates[2].entity.action_profile_member.member_id == 4  # leaf0's port to spine1
    assert plan_updates(intent.state(after), apply(device, batches)) == []


def test_stale_entries_are_deleted_after_their_users(intent):
    spec = build_fabric("leafspine")
    routes = compute_routes(spec)["leaf0"]
    device = apply(DeviceState(), plan_updates(intent.state(routes), DeviceState()))
    routes.routes = {p: h for p, h in routes.routes.items() if p != "10.0.0.1/32"}
    routes.groups = {h: g for h, g in routes.groups.items() if h in routes.routes.values()}
    batches = plan_updates(intent.state(routes), device)
    kinds = [(u.type, u.entity.WhichOneof("entity")) for b in batches for u in b]
    assert kinds == [(DELETE, "table_entry"), (DELETE, "action_profile_group"),
                     (DELETE, "action_profile_member")]


def test_updates_are_described_in_p4_terms(intent):
    routes = compute_routes(build_fabric("leafspine"))["leaf0"]
    batches = plan_updates(intent.state(routes), DeviceState())
    text = [describe_update(intent.schema, u) for b in batches for u in b]
    assert "INSERT member 1 of FabricIngress.routing.ipv4_lpm_selector" in text
    assert any(t.startswith("INSERT FabricIngress.routing.ipv4_lpm entry "
                            "hdr.ipv4.dst_addr=10.0.0.1/32 -> action_profile_group_id")
               for t in text)
    assert "MODIFY default action of FabricIngress.routing.hash_seed" in text


def test_unknown_names_list_what_exists():
    schema = Schema(routing_p4info())
    with pytest.raises(SchemaError, match=r"no table named 'nope' \(it has: .*ipv4_lpm"):
        schema.table("nope")
    with pytest.raises(SchemaError, match="has no parameter 'x' .*port, dmac"):
        schema.param("FabricIngress.routing.set_next_hop", "x")
    with pytest.raises(ValueError, match="does not fit in 9 bits"):
        encode(512, 9, "port")


def test_a_watch_given_as_the_deprecated_int_reads_back_the_same():
    entity = p4runtime_pb2.Entity()
    group = entity.action_profile_group
    group.action_profile_id, group.group_id = 7, 1
    group.members.add(member_id=3, weight=1, watch=3)
    group.members.add(member_id=4, weight=1, watch_port=b"\x00\x04")
    state = add_read_entities(DeviceState(), [entity])
    assert state.groups[(7, 1)] == ((3, 1, encode(3, 9)), (4, 1, encode(4, 9)))
