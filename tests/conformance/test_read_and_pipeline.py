"""Read (P4Runtime spec: canonical byte strings) and the forwarding pipeline config RPCs: a
refused SetForwardingPipelineConfig leaves the running pipeline and its entries as they were."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2 as pb
from p4rt_codes import rpc_code, write_codes
from sw_p4rt import update

SetReq = pb.SetForwardingPipelineConfigRequest
GetReq = pb.GetForwardingPipelineConfigRequest


def test_reads_return_canonical_byte_strings(rig):
    te = rig.fwd(1, 2)
    te.match[0].exact.value = b"\x00\x01"  # padded: the switch stores the value
    assert write_codes(rig.primary, update("INSERT", table_entry=te)) == ["OK"]
    [got] = rig.entries("fwd")
    assert got.match[0].exact.value == b"\x01"
    assert got.action.action.params[0].value == b"\x02"


def test_capabilities_answers_without_a_stream(rig):
    caps = rig.client(None).stub.Capabilities(pb.CapabilitiesRequest(), timeout=5)
    assert caps.p4runtime_api_version.startswith("1.")


def _set(rig, client, action, *, config=True) -> str:
    req = SetReq(device_id=rig.device_id, action=action)
    if client.election is not None:
        req.election_id.low = client.election
    if config:
        req.config.p4info.CopyFrom(rig.pipeline.p4info)
        req.config.p4_device_config = rig.pipeline.device_config
        req.config.cookie.cookie = 77
    return rpc_code(client.stub.SetForwardingPipelineConfig, req, timeout=30)


def _state(rig) -> tuple:
    get = GetReq(device_id=rig.device_id, response_type=GetReq.COOKIE_ONLY)
    cookie = rig.primary.stub.GetForwardingPipelineConfig(get, timeout=5).config.cookie.cookie
    return cookie, [e.SerializeToString() for e in rig.entries("fwd")]


def test_refused_pipeline_pushes_change_nothing(rig, request):
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1, 2))) == ["OK"]
    before = _state(rig)
    assert _set(rig, rig.primary, SetReq.UNSPECIFIED) == "INVALID_ARGUMENT"
    assert _state(rig) == before
    backup = rig.client(rig.primary.election - 1)
    assert backup.next("arbitration").status.code != 0
    assert _set(rig, backup, SetReq.VERIFY_AND_COMMIT) == "PERMISSION_DENIED"
    assert _state(rig) == before


def test_verify_checks_without_installing_and_commit_needs_a_saved_config(rig):
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1, 2))) == ["OK"]
    before = _state(rig)
    assert _set(rig, rig.primary, SetReq.VERIFY) == "OK"
    assert _state(rig) == before
    assert _set(rig, rig.primary, SetReq.VERIFY_AND_SAVE) == "OK"
    assert _set(rig, rig.primary, SetReq.COMMIT, config=False) == "OK"
    assert _state(rig) == (77, [])  # the saved config is running, with empty tables


def test_get_pipeline_returns_what_was_pushed(rig):
    assert _set(rig, rig.primary, SetReq.VERIFY_AND_COMMIT) == "OK"
    get = GetReq(device_id=rig.device_id, response_type=GetReq.P4INFO_AND_COOKIE)
    config = rig.primary.stub.GetForwardingPipelineConfig(get, timeout=5).config
    assert config.cookie.cookie == 77
    assert {t.preamble.id for t in config.p4info.tables} == {
        t.preamble.id for t in rig.pipeline.p4info.tables}
    assert config.p4_device_config == b""
