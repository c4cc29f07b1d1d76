"""gRPC status replies as PI gives them, with `p4.v1.Error` details for Write."""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime.errors import RuntimeApiError

ERROR_SPACE = "ALL-sswitch-p4org"


class RpcError(Exception):
    """A request the server rejects with any gRPC code (UNKNOWN included)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class _Status(grpc.Status):
    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata: tuple = ()):
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata


def grpc_code(name: str) -> grpc.StatusCode:
    return getattr(grpc.StatusCode, name)


def abort(context: grpc.ServicerContext, code: str, message: str) -> None:
    """End the RPC with status `code` (a google.rpc code name) and `message`; raises."""
    status = status_pb2.Status(code=code_pb2.Code.Value(code), message=message)
    context.abort_with_status(_Status(grpc_code(code), message, (
        ("grpc-status-details-bin", status.SerializeToString()),)))


def abort_write(context: grpc.ServicerContext,
                results: Sequence[tuple[str, str] | None]) -> None:
    """End a Write whose updates did not all succeed: UNKNOWN with one p4.v1.Error per update
    (`results[i]` is None for a success, else (code name, message)). Raises."""
    details = []
    failed = [r for r in results if r is not None]
    for r in results:
        err = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
        if r is not None:
            err.canonical_code = code_pb2.Code.Value(r[0])
            err.message = r[1]
            err.space = ERROR_SPACE
        packed = any_pb2.Any()
        packed.Pack(err)
        details.append(packed)
    message = failed[0][1] if len(failed) == 1 else f"{len(failed)} of {len(results)} updates failed"
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message=message, details=details)
    context.abort_with_status(_Status(grpc.StatusCode.UNKNOWN, message, (
        ("grpc-status-details-bin", status.SerializeToString()),)))


def stream_error(exc: RuntimeApiError, packet: p4runtime_pb2.PacketOut
                 ) -> p4runtime_pb2.StreamMessageResponse:
    """The StreamError telling the controller that a packet-out was refused."""
    msg = p4runtime_pb2.StreamMessageResponse()
    msg.error.canonical_code = code_pb2.Code.Value(exc.code)
    msg.error.message = exc.message
    msg.error.space = ERROR_SPACE
    msg.error.packet_out.packet_out.CopyFrom(packet)
    return msg
