"""Client arbitration (P4Runtime spec §5) and the bound on StreamChannels."""

from __future__ import annotations

import concurrent.futures

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4rt_codes import rpc_code, stream_end_code, write_codes
from sw_p4rt import update


def test_highest_election_id_is_primary_and_everyone_is_told(rig):
    first = rig.primary
    second = rig.client()  # a higher id: the new primary
    arb = second.next("arbitration")
    assert arb.status.code == code_pb2.OK
    assert (arb.election_id.high, arb.election_id.low) == (0, second.election)
    demoted = first.next("arbitration")
    assert demoted.status.code == code_pb2.ALREADY_EXISTS
    assert demoted.election_id.low == second.election
    backup = rig.client(first.election - 1)
    told = backup.next("arbitration")
    assert told.status.code == code_pb2.ALREADY_EXISTS and told.election_id.low == second.election


def test_write_from_a_backup_is_permission_denied_and_changes_nothing(rig):
    backup = rig.client(rig.primary.election - 1)
    assert backup.next("arbitration").status.code == code_pb2.ALREADY_EXISTS
    assert rpc_code(backup.write, update("INSERT", table_entry=rig.fwd(1))) == "PERMISSION_DENIED"
    assert rig.entries("fwd") == []
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1))) == ["OK"]


def test_duplicate_election_id_is_invalid_argument_and_the_holder_stays_primary(rig):
    dup = rig.client(rig.primary.election)
    assert stream_end_code(dup) == "INVALID_ARGUMENT"
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(2))) == ["OK"]
    assert len(rig.entries("fwd")) == 1


def test_reconnect_with_the_same_election_id_is_accepted_every_time(rig):
    election = rig.primary.election + 1
    for _ in range(40):
        c = rig.client(election)
        assert c.next("arbitration").status.code == code_pb2.OK
        c.close()
    assert rpc_code(rig.client(None).stub.Capabilities, pb.CapabilitiesRequest(), timeout=5) == "OK"


def test_streams_are_bounded_and_unary_calls_are_served_whatever_they_do(rig):
    """20 silent streams: 16 are served (the primary's is one of them), the rest refused with
    RESOURCE_EXHAUSTED; Capabilities, Read and Write still answer promptly."""
    first_id = rig.primary.election + 1
    streams = [rig.client(first_id + i) for i in range(19)]
    ends = {}
    for i, s in enumerate(streams):
        msg = s.incoming.get(timeout=10)
        if msg is None:
            ends[i] = s.stream_error.code().name if s.stream_error else "OK"
    # 16 at most (fewer while streams of the test before are still being torn down)
    assert set(ends.values()) == {"RESOURCE_EXHAUSTED"} and len(ends) >= 4, ends
    unary = rig.client(None)
    req = pb.ReadRequest(device_id=rig.device_id)
    req.entities.add().table_entry.table_id = 0
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        caps = pool.submit(rpc_code, unary.stub.Capabilities, pb.CapabilitiesRequest(), timeout=3)
        read = pool.submit(rpc_code, unary.stub.Read, req, timeout=3)
        assert caps.result() == "OK" and read.result() == "OK"
    # the primary (the highest id among the served streams) writes
    served = [s for i, s in enumerate(streams) if i not in ends]
    primary = max(served, key=lambda s: s.election)
    wreq = pb.WriteRequest(device_id=rig.device_id, updates=[update("INSERT",
                                                                     table_entry=rig.fwd(3))])
    wreq.election_id.low = primary.election
    assert rpc_code(primary.stub.Write, wreq, timeout=3) == "OK"
    assert len(rig.entries("fwd")) == 1


def test_a_freed_stream_slot_is_served_again(rig):
    streams = [rig.client() for _ in range(16)]  # with the primary's: 17
    served = [s for s in streams if s.incoming.get(timeout=10) is not None]
    assert len(served) <= 15
    served[0].close()
    for _ in range(50):  # the slot is freed once the switch has seen the stream end
        again = rig.client()
        msg = again.incoming.get(timeout=5)
        if msg is not None:
            assert msg.arbitration.status.code == code_pb2.OK
            return
    pytest.fail("a closed stream's slot was never given to a new stream")
