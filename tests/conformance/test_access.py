"""Who may write (P4Runtime spec §5, §12.2, §13.1): election ids, roles, device ids, and the
bounds on streams and messages.

Tests on `bare` get a switch no stream was ever opened on; the others share the module's."""

from __future__ import annotations

import pytest
from conf_program import fwd_entry
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4rt_codes import rpc_code, stream_end_code, write_codes
from sw_p4rt import UNSET, Client, update

from p4switch.p4info.index import P4InfoIndex

SetReq = pb.SetForwardingPipelineConfigRequest
GetReq = pb.GetForwardingPipelineConfigRequest
TOP = (1 << 128) - 1  # the highest election id
LOW64 = (1 << 64) - 1


def _elect(req, election: int | None) -> None:
    if election is not None:
        req.election_id.high, req.election_id.low = election >> 64, election & LOW64


def set_request(device_id: int, pipeline, election: int | None, role: str = "") -> SetReq:
    req = SetReq(device_id=device_id, action=SetReq.VERIFY_AND_COMMIT, role=role)
    _elect(req, election)
    req.config.p4info.CopyFrom(pipeline.p4info)
    req.config.p4_device_config = pipeline.device_config
    return req


def write_request(device_id: int, election: int | None, *entries: pb.TableEntry,
                  role: str = "") -> pb.WriteRequest:
    req = pb.WriteRequest(device_id=device_id, role=role,
                          updates=[update("INSERT", table_entry=e) for e in entries])
    _elect(req, election)
    return req


def no_pipeline(client: Client) -> bool:
    get = GetReq(device_id=client.device_id, response_type=GetReq.COOKIE_ONLY)
    return rpc_code(client.stub.GetForwardingPipelineConfig, get, timeout=5) == \
        "FAILED_PRECONDITION"


@pytest.fixture
def bare_clients(bare):
    """(make a client of the bare switch, pipeline, P4Info index); clients closed at the end."""
    _, model, pipeline = bare
    made: list[Client] = []

    def make(election=None) -> Client:
        made.append(Client(model.grpc_addr, model.device_id, election))
        return made[-1]

    yield make, pipeline, P4InfoIndex(pipeline.p4info)
    for c in made:
        c.close()


# -- no stream open -------------------------------------------------------------------------
def test_with_no_stream_open_a_request_with_an_election_id_is_permission_denied(bare_clients):
    make, pipeline, index = bare_clients
    c = make()
    assert rpc_code(c.stub.SetForwardingPipelineConfig,
                    set_request(c.device_id, pipeline, 1), timeout=30) == "PERMISSION_DENIED"
    assert rpc_code(c.stub.Write, write_request(c.device_id, 1, fwd_entry(index, 1)),
                    timeout=10) == "PERMISSION_DENIED"
    assert no_pipeline(c)


def test_with_no_stream_open_a_request_without_election_id_is_permission_denied(
        bare_clients, bare, request):
    if bare[0].name == "bmv2":
        request.applymarker(pytest.mark.xfail(strict=True, reason="BMv2 departs: with no "
                                              "stream open, PI accepts requests without an "
                                              "election id"))
    make, pipeline, index = bare_clients
    c = make()
    assert rpc_code(c.stub.SetForwardingPipelineConfig,
                    set_request(c.device_id, pipeline, None), timeout=30) == "PERMISSION_DENIED"
    assert rpc_code(c.stub.Write, write_request(c.device_id, None, fwd_entry(index, 1)),
                    timeout=10) == "PERMISSION_DENIED"
    assert no_pipeline(c)


# -- election ids ---------------------------------------------------------------------------
def test_election_ids_0_and_2_128_minus_1_are_election_ids_like_any_other(bare_clients):
    make, pipeline, index = bare_clients
    zero = make(0)
    arb = zero.next("arbitration")
    assert arb.status.code == code_pb2.OK and arb.HasField("election_id")
    assert (arb.election_id.high, arb.election_id.low) == (0, 0)
    zero.set_pipeline(pipeline.p4info, pipeline.device_config)  # election_id {0, 0}, set
    assert write_codes(zero, update("INSERT", table_entry=fwd_entry(index, 1))) == ["OK"]
    top = make(TOP)
    arb = top.next("arbitration")
    assert arb.status.code == code_pb2.OK
    assert (arb.election_id.high, arb.election_id.low) == (LOW64, LOW64)
    demoted = zero.next("arbitration")
    assert demoted.status.code == code_pb2.ALREADY_EXISTS and demoted.election_id.high == LOW64
    assert rpc_code(zero.write, update("INSERT", table_entry=fwd_entry(index, 2))) == \
        "PERMISSION_DENIED"
    assert write_codes(top, update("INSERT", table_entry=fwd_entry(index, 2))) == ["OK"]


def test_a_request_without_election_id_is_not_the_primarys_even_if_it_holds_0(
        bare_clients, bare, request):
    if bare[0].name == "bmv2":
        request.applymarker(pytest.mark.xfail(strict=True, reason="BMv2 departs: PI takes an "
                                              "unset election id for 0"))
    make, pipeline, index = bare_clients
    zero = make(0)
    assert zero.next("arbitration").status.code == code_pb2.OK
    zero.set_pipeline(pipeline.p4info, pipeline.device_config)
    assert rpc_code(zero.stub.Write, write_request(zero.device_id, None, fwd_entry(index, 1)),
                    timeout=10) == "PERMISSION_DENIED"


def test_streams_without_election_id_are_backups_and_never_duplicates(bare_clients, bare,
                                                                    request):
    if bare[0].name == "bmv2":
        request.applymarker(pytest.mark.xfail(strict=True, reason="BMv2 departs: PI takes an "
                                              "unset election id for 0 (primary, and a second "
                                              "one a duplicate)"))
    make, _, _ = bare_clients
    unset = [make(UNSET), make(UNSET)]
    for c in unset:  # no primary: NOT_FOUND, and no election id was ever received
        arb = c.next("arbitration")
        assert arb.status.code == code_pb2.NOT_FOUND and not arb.HasField("election_id")
    controller = make(1)
    assert controller.next("arbitration").status.code == code_pb2.OK
    for c in unset:
        arb = c.next("arbitration")
        assert arb.status.code == code_pb2.ALREADY_EXISTS and arb.election_id.low == 1


def test_a_stream_without_election_id_is_a_backup_of_the_primary(rig):
    c = rig.client(UNSET)
    arb = c.next("arbitration")
    assert arb.status.code == code_pb2.ALREADY_EXISTS
    assert (arb.election_id.high, arb.election_id.low) == (0, rig.primary.election)
    req = write_request(rig.device_id, None, rig.fwd(1))
    assert rpc_code(c.stub.Write, req, timeout=10) == "PERMISSION_DENIED"
    assert rig.entries("fwd") == []


# -- roles and devices ----------------------------------------------------------------------
def test_an_arbitration_with_a_role_is_invalid_argument(rig, request):
    rig.departs(request, "roles are ignored: a named role arbitrates as the default role")
    c = rig.client(None)
    c.open_stream()
    msg = pb.StreamMessageRequest()
    msg.arbitration.device_id = rig.device_id
    msg.arbitration.role.name = "telemetry"
    msg.arbitration.election_id.low = rig.primary.election + 1
    c.send(msg)
    assert stream_end_code(c) == "INVALID_ARGUMENT"
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1))) == ["OK"]


def test_a_request_for_an_unknown_role_is_not_found_and_changes_nothing(rig, request):
    rig.departs(request, "roles are ignored: the primary's request for any role is served")
    req = write_request(rig.device_id, rig.primary.election, rig.fwd(1), role="telemetry")
    assert rpc_code(rig.primary.stub.Write, req, timeout=10) == "NOT_FOUND"
    req = set_request(rig.device_id, rig.pipeline, rig.primary.election, role="telemetry")
    assert rpc_code(rig.primary.stub.SetForwardingPipelineConfig, req, timeout=30) == "NOT_FOUND"
    assert rig.entries("fwd") == []


def test_a_first_arbitration_for_another_device_is_not_found(rig, request):
    rig.departs(request, "PI creates a device for any device id a stream names")
    c = Client(rig.addr, rig.device_id + 1, rig.primary.election + 1)
    try:
        assert stream_end_code(c) == "NOT_FOUND"
    finally:
        c.close()


def test_a_live_stream_that_names_another_device_is_failed_precondition(rig):
    c = rig.client()
    assert c.next("arbitration").status.code == code_pb2.OK
    c.device_id = rig.device_id + 1
    c.arbitrate(c.election)
    assert stream_end_code(c) == "FAILED_PRECONDITION"


# -- bounds ---------------------------------------------------------------------------------
def test_streams_that_never_arbitrate_do_not_lock_a_controller_out(rig):
    """PI counts a stream once it arbitrates: 40 silent streams, then a controller that is
    primary at once and writes."""
    silent = [rig.client(None) for _ in range(40)]
    for s in silent:
        s.open_stream()
    controller = rig.client()
    arb = controller.next("arbitration", timeout=10)
    assert arb.status.code == code_pb2.OK
    assert write_codes(controller, update("INSERT", table_entry=rig.fwd(1))) == ["OK"]


def test_p4switch_ends_the_silent_stream_that_waited_longest(rig):
    """p4switch's own bound (PI has none): 16 streams wait to arbitrate; the 17th ends the
    first with RESOURCE_EXHAUSTED."""
    if rig.target.name != "p4switch":
        pytest.skip("p4switch's own bound")
    silent = [rig.client(None) for _ in range(17)]
    for s in silent:  # one at a time: the first is the oldest
        s.open_stream()
        assert rpc_code(s.stub.Capabilities, pb.CapabilitiesRequest(), timeout=5) == "OK"
    assert stream_end_code(silent[0]) == "RESOURCE_EXHAUSTED"
    assert "waited longest" in silent[0].stream_error.details()


def test_p4switch_refuses_a_message_over_64_mb_before_parsing_it(rig):
    if rig.target.name != "p4switch":
        pytest.skip("p4switch's own bound (PI's is 256 MB)")
    big = rig.fwd(1)
    big.match[0].exact.value = b"\x00" * (64 * 1024 * 1024)
    assert rpc_code(rig.primary.write, update("INSERT", table_entry=big)) == "RESOURCE_EXHAUSTED"
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1))) == ["OK"]
