"""Packet replication engine: BMv2 node/group model, P4Runtime groups, clone sessions."""

import pytest

from p4switch.runtime import PacketReplicationEngine, RuntimeApiError


def err(op):
    with pytest.raises(RuntimeApiError) as e:
        op()
    return e.value.code


def test_bmv2_nodes_and_groups():
    pre = PacketReplicationEngine()
    assert pre.mc_mgrp_create(1) == 1
    n0 = pre.mc_node_create(7, [3, 1, 2])
    n1 = pre.mc_node_create(9, [4])
    assert (n0, n1) == (0, 1)
    pre.mc_node_associate(1, n1)
    pre.mc_node_associate(1, n0)
    # association order, ports ascending within a node
    assert pre.replicas(1) == [(4, 9), (1, 7), (2, 7), (3, 7)]
    pre.mc_node_update(n1, [5, 6])
    assert pre.replicas(1) == [(5, 9), (6, 9), (1, 7), (2, 7), (3, 7)]
    pre.mc_node_dissociate(1, n1)
    assert pre.replicas(1) == [(1, 7), (2, 7), (3, 7)]
    assert err(lambda: pre.mc_node_dissociate(1, n1)) == "INVALID_ARGUMENT"
    assert err(lambda: pre.mc_node_associate(1, n0)) == "INVALID_ARGUMENT"  # already associated
    assert err(lambda: pre.mc_node_associate(2, n1)) == "NOT_FOUND"  # no group 2
    assert err(lambda: pre.mc_node_update(9, [1])) == "NOT_FOUND"
    pre.mc_node_destroy(n0)  # destroying an associated node dissociates it
    assert pre.replicas(1) == []
    assert pre.mc_node_create(1, [8]) == 0  # handle reused
    assert pre.replicas(2) == []  # unknown group: no copies
    pre.mc_mgrp_destroy(1)
    pre.mc_mgrp_destroy(1)  # like BMv2, destroying an unknown group is not an error
    assert pre.mgrps() == {}


def test_p4runtime_multicast_groups():
    pre = PacketReplicationEngine()
    pre.insert_multicast_group(1, [(3, 0), (1, 0), (2, 5)])
    assert pre.replicas(1) == [(1, 0), (3, 0), (2, 5)]  # nodes by ascending instance
    assert err(lambda: pre.insert_multicast_group(1, [])) == "ALREADY_EXISTS"
    assert err(lambda: pre.insert_multicast_group(0, [(1, 0)])) == "INVALID_ARGUMENT"
    assert err(lambda: pre.insert_multicast_group(1 << 15, [(1, 0)])) == "OUT_OF_RANGE"
    assert err(lambda: pre.insert_multicast_group(2, [(1, 0), (1, 0)])) == "INVALID_ARGUMENT"
    assert err(lambda: pre.insert_multicast_group(2, [(512, 0)])) == "INVALID_ARGUMENT"
    assert err(lambda: pre.insert_multicast_group(2, [(1, 1 << 16)])) == "INVALID_ARGUMENT"
    assert err(lambda: pre.modify_multicast_group(2, [])) == "NOT_FOUND"
    assert err(lambda: pre.delete_multicast_group(2)) == "NOT_FOUND"
    # modify: instance 5 node updated in place, instance 0 removed, instance 2 appended
    pre.modify_multicast_group(1, [(4, 5), (6, 2)])
    assert pre.replicas(1) == [(4, 5), (6, 2)]
    assert pre.multicast_groups() == {1: [(4, 5), (6, 2)]}
    pre.set_multicast_group(3, [(1, 1)])
    assert pre.replicas(3) == [(1, 1)]
    pre.delete_multicast_group(1)
    assert pre.replicas(1) == [] and list(pre.multicast_groups()) == [3]
    assert list(pre.nodes()) == [0]  # only group 3's node is left


def test_clone_sessions():
    pre = PacketReplicationEngine()
    pre.mirroring_add(5, 3)
    assert pre.clone_session(5).egress_port == 3
    assert pre.clone_targets(5) == [(3, 0)]
    pre.mc_mgrp_create(9)
    pre.mc_node_associate(9, pre.mc_node_create(2, [1, 2]))
    pre.mirroring_add_mc(6, 9)
    assert pre.clone_targets(6) == [(1, 2), (2, 2)]
    pre.mirroring_delete(5)
    assert pre.clone_session(5) is None and pre.clone_targets(5) is None
    assert err(lambda: pre.mirroring_delete(5)) == "NOT_FOUND"
    # P4Runtime CloneSessionEntry
    pre.insert_clone_session(100, [(4, 1), (3, 0)])
    assert pre.clone_targets(100) == [(3, 0), (4, 1)]
    assert err(lambda: pre.insert_clone_session(100, [(4, 1)])) == "ALREADY_EXISTS"
    assert err(lambda: pre.modify_clone_session(101, [(4, 1)])) == "NOT_FOUND"
    assert err(lambda: pre.delete_clone_session(101)) == "NOT_FOUND"
    assert err(lambda: pre.insert_clone_session(0, [(4, 1)])) == "INVALID_ARGUMENT"
    assert err(lambda: pre.insert_clone_session(32768, [(4, 1)])) == "INVALID_ARGUMENT"
    assert err(lambda: pre.insert_clone_session(7, [(4, 1)], class_of_service=1)) \
        == "UNIMPLEMENTED"
    assert err(lambda: pre.insert_clone_session(7, [(4, 1)], packet_length_bytes=64)) \
        == "UNIMPLEMENTED"
    pre.modify_clone_session(100, [(8, 0)])
    assert pre.clone_targets(100) == [(8, 0)]
    pre.delete_clone_session(100)
    assert pre.clone_session(100) is None


def test_state_pre_reset(state):
    state.pre.insert_multicast_group(1, [(1, 0)])
    state.pre.mirroring_add(1, 2)
    state.reset()
    assert state.pre.replicas(1) == [] and state.pre.clone_session(1) is None
