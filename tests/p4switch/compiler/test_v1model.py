"""v1model packet operations in simple_switch's order and with its metadata."""

from __future__ import annotations

import pytest

PAYLOAD = b"\xde\xad\xbe\xef" * 4


def cmd(op: int, arg: int = 0) -> bytes:
    return bytes([op, arg, 0, 0, 0, 0, 0, 0]) + PAYLOAD


def seen(instance: int, port: int, rid: int = 0, kept: int = 0, lost: int = 0,
         passes: int = 1, op: int = 0, arg: int = 0) -> bytes:
    return bytes([op, arg, instance, port, rid, kept, lost, passes]) + PAYLOAD


def test_unicast_and_drop(switch):
    sw = switch("v1model_ops.p4")
    assert sw.send(0, cmd(1, 7)) == [(7, seen(0, 7, op=1, arg=7))]
    assert sw.send(0, cmd(2)) == []
    assert sw.send(0, cmd(1, 255)) == [(255, seen(0, 255, op=1, arg=255))]


def test_egress_spec_equal_to_drop_port_drops(switch):
    sw = switch("v1model_ops.p4", drop_port=7)
    assert sw.send(0, cmd(1, 7)) == []
    assert sw.send(0, cmd(1, 6)) == [(6, seen(0, 6, op=1, arg=6))]


def test_multicast_replicates_with_rid_and_instance_type(switch):
    sw = switch("v1model_ops.p4")
    sw.state.pre.set_multicast_group(5, [(2, 10), (3, 11), (4, 10)])
    out = sw.send(0, cmd(3, 5))
    assert sorted(out) == [(p, seen(5, p, rid, op=3, arg=5))
                           for p, rid in [(2, 10), (3, 11), (4, 10)]]
    assert sw.send(0, cmd(3, 6)) == []  # unknown group: no copies


def test_ingress_clone_is_the_original_packet_with_its_field_list(switch):
    sw = switch("v1model_ops.p4")
    sw.state.pre.mirroring_add(9, 4)
    out = sw.send(0, cmd(4, 9))
    # the clone was re-parsed from the received bytes: passes is 0 (not incremented), and only
    # the @field_list(1) metadata survived
    assert sorted(out) == sorted([
        (4, seen(1, 4, kept=0x5A, lost=0, passes=0, op=4, arg=9)),
        (1, seen(0, 1, kept=0x5A, lost=0x77, passes=1, op=4, arg=9)),
    ])
    # a session that is not configured makes no clone
    assert sw.send(0, cmd(4, 10)) == [(1, seen(0, 1, kept=0x5A, lost=0x77, op=4, arg=10))]


def test_egress_clone_carries_the_egress_headers(switch):
    sw = switch("v1model_ops.p4")
    sw.state.pre.mirroring_add(3, 6)
    out = sw.send(0, cmd(10, 3))
    assert sorted(out) == sorted([
        (1, seen(0, 1, op=10, arg=3)),
        # the clone starts from the egress-modified headers and runs egress again
        (6, seen(2, 6, op=10, arg=3)),
    ])


def test_resubmit_restarts_ingress_with_the_field_list(switch):
    sw = switch("v1model_ops.p4")
    # the resubmitted packet is the original (passes counts the second ingress only), ingress
    # saw instance_type RESUBMIT (egress_spec 2); enqueued packets are NORMAL again in egress
    assert sw.send(0, cmd(5)) == [(2, seen(0, 2, kept=7, lost=0, passes=1, op=5))]


def test_recirculate_feeds_the_deparsed_packet_back(switch):
    sw = switch("v1model_ops.p4")
    out = sw.send(0, cmd(6))
    # the second ingress saw instance_type RECIRC (egress_spec 3) and the field list
    assert out == [(3, seen(0, 3, kept=3, lost=0, passes=2, op=6))]


def test_digest_is_emitted_after_ingress(switch):
    sw = switch("v1model_ops.p4")
    got = []
    sw.state.digests.sink = lambda name, values: got.append((name, values))
    sw.state.digests.configure("learn_t")
    sw.send(12, cmd(7, 0x33))
    assert got == [("learn_t", (0x33, 12))]
    assert [d.name for d in sw.program.model.digests] == ["learn_t"]
    assert [(f.name, f.bitwidth) for f in sw.program.model.digests[0].fields] == [
        ("arg", 8), ("port", 9)]


def test_only_the_last_digest_call_counts(switch):
    sw = switch("v1model_ops.p4")
    got = []
    sw.state.digests.sink = lambda name, values: got.append((name, values))
    sw.state.digests.configure("learn_t")
    sw.send(3, cmd(12, 0x33))
    assert got == [("learn_t", (1, 3))]


def test_truncate_and_priority(switch):
    sw = switch("v1model_ops.p4")
    assert sw.send(0, cmd(8)) == [(1, seen(0, 1, op=8)[:5])]
    assert sw.send(0, cmd(9)) == []  # priority 3 with one queue per port
    sw4 = switch("v1model_ops.p4", priority_queues=4)
    assert sw4.send(0, cmd(9)) == [(1, seen(0, 1, op=9))]


def test_truncate_keeps_the_smallest_length_asked_in_either_pipe(switch):
    """BMv2's Packet::truncate: every call lowers the length to keep, in ingress and egress."""
    sw = switch("v1model_ops.p4")
    assert sw.send(0, cmd(13)) == [(1, seen(0, 1, op=13)[:6])]  # truncate(6); truncate(12)
    assert sw.send(0, cmd(14)) == [(1, seen(0, 1, op=14)[:12])]  # 12 in ingress, 20 in egress


def test_truncate_cuts_the_packet_and_none_of_its_copies(switch):
    """A copy (multicast replica, clone, recirculated packet) starts from the whole buffer with
    nothing to cut (BMv2's clone_* make a Packet anew): only the packet that called truncate is
    cut."""
    sw = switch("v1model_ops.p4")
    sw.state.pre.set_multicast_group(5, [(2, 0), (4, 0)])
    assert sorted(sw.send(0, cmd(15, 5))) == [(p, seen(5, p, op=15, arg=5)) for p in (2, 4)]
    assert sw.send(0, cmd(16)) == [(3, seen(0, 3, passes=2, op=16))]  # recirculated whole
    sw.state.pre.mirroring_add(9, 4)
    assert sorted(sw.send(0, cmd(17, 9))) == [(1, seen(0, 1, op=17, arg=9)[:6]),
                                              (4, seen(1, 4, passes=0, op=17, arg=9))]
    sw.state.pre.mirroring_add(3, 6)
    assert sorted(sw.send(0, cmd(18, 3))) == [(1, seen(0, 1, op=18, arg=3)[:6]),
                                              (6, seen(2, 6, op=18, arg=3))]


def test_egress_drop(switch):
    sw = switch("v1model_ops.p4")
    assert sw.send(0, cmd(11)) == []


def test_queueing_metadata_reaches_egress(switch):
    sw = switch("v1model_ops.p4")
    (item,) = sw.engine.ingress(0, cmd(1, 2))
    assert (item.egress_port, item.priority) == (2, 0)
    frames, new = sw.engine.egress(item, enq_timestamp=10, enq_qdepth=3, deq_qdepth=2,
                                   deq_timedelta=5)
    assert frames == [(2, seen(0, 2, op=1, arg=2))] and new == []


def test_internal_errors_drop_the_packet_instead_of_raising(switch):
    if switch.keywords.get("pipeline") == "c":
        pytest.skip("the C data plane has no Python stage to break")
    sw = switch("v1model_ops.p4")

    def broken(*args):
        raise RuntimeError("boom")

    sw.engine._ingress = broken
    assert sw.engine.ingress(0, cmd(1, 2)) == []
    assert sw.engine.internal_errors == 1
    assert any("boom" in line for line in sw.logs)
