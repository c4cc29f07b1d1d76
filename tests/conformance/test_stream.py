"""The StreamChannel (P4Runtime spec: packet I/O and stream error reporting): packet-out from
the primary only, packet-in to the primary only, a refused packet-out reported as a
StreamError on a stream that stays open, and a message that does not parse refusing the
stream with INVALID_ARGUMENT."""

from __future__ import annotations

import queue

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4rt_codes import rpc_code

CPU_PORT = 510
FRAME = bytes(range(6)) * 2 + b"\x88\xb5" + b"conformance"


def _packet_ins(client, timeout: float, settle: float = 0.3) -> list[pb.PacketIn]:
    """Packet-ins `client` gets: none if the first does not come within `timeout` (s), else
    every one until none came for `settle` (s)."""
    out = []
    try:
        out.append(client.next("packet", timeout=timeout))
        while True:
            out.append(client.next("packet", timeout=settle))
    except queue.Empty:
        return out


def test_packet_out_from_the_primary_comes_back_as_packet_in_to_the_primary(rig):
    backup = rig.client(rig.primary.election - 1)
    assert backup.next("arbitration").status.code == code_pb2.ALREADY_EXISTS
    rig.primary.send_packet(FRAME, {1: CPU_PORT.to_bytes(2, "big")})
    [pin] = _packet_ins(rig.primary, 3.0)
    assert pin.payload == FRAME
    assert {m.metadata_id: int.from_bytes(m.value, "big") for m in pin.metadata}[1] == CPU_PORT
    assert _packet_ins(backup, 0.5) == []


def test_packet_out_from_a_backup_is_ignored(rig):
    backup = rig.client(rig.primary.election - 1)
    assert backup.next("arbitration").status.code == code_pb2.ALREADY_EXISTS
    backup.send_packet(FRAME, {1: CPU_PORT.to_bytes(2, "big")})
    assert _packet_ins(rig.primary, 1.0) == []


def test_a_refused_packet_out_is_a_stream_error_and_the_stream_stays_open(rig, request):
    rig.departs(request, "a refused packet-out is dropped silently: PI reports StreamErrors "
                "only when its server config enables them (DISABLED by default)")
    rig.primary.send_packet(FRAME, {99: b"\x01"})  # no such packet_out field
    error = rig.primary.next("error", timeout=2.0)
    assert error.canonical_code == code_pb2.INVALID_ARGUMENT
    assert error.packet_out.packet_out.payload == FRAME
    rig.primary.send_packet(FRAME, {1: CPU_PORT.to_bytes(2, "big")})
    [pin] = _packet_ins(rig.primary, 3.0)
    assert pin.payload == FRAME


@pytest.mark.parametrize("garbage", [b"\xff\xff\xff\xff", b"\x0a\x05\x08\x07\x12"],
                         ids=["bad-tag", "truncated"])
def test_a_message_that_does_not_parse_ends_the_stream_with_invalid_argument(rig, request,
                                                                             garbage):
    channel = grpc.insecure_channel(rig.addr)
    try:
        call = channel.stream_stream("/p4.v1.P4Runtime/StreamChannel")(iter([garbage]),
                                                                       timeout=5)
        rig.departs(request, "a stream message that does not parse ends the stream with OK")
        with pytest.raises(grpc.RpcError) as err:
            list(call)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        # the switch is unaffected: the primary still writes, Capabilities answers
        caps = channel.unary_unary("/p4.v1.P4Runtime/Capabilities",
                                   request_serializer=pb.CapabilitiesRequest.SerializeToString,
                                   response_deserializer=pb.CapabilitiesResponse.FromString)
        assert rpc_code(caps, pb.CapabilitiesRequest(), timeout=5) == "OK"
    finally:
        channel.close()


def test_a_unary_request_that_does_not_parse_is_invalid_argument(rig):
    if rig.target.name != "p4switch":
        pytest.skip("on BMv2 gRPC's C++ library answers INTERNAL itself: no P4Runtime code runs")
    channel = grpc.insecure_channel(rig.addr)
    try:
        write = channel.unary_unary("/p4.v1.P4Runtime/Write")
        assert rpc_code(write, b"\xff\xff\xff", timeout=5) == "INVALID_ARGUMENT"
        assert rig.entries() == []
    finally:
        channel.close()
