"""The gRPC method handlers of the P4Runtime service.

They differ from the generated `add_P4RuntimeServicer_to_server` in one way: a request that does
not parse as its message type reaches the service as `Unparsable` and is answered
INVALID_ARGUMENT (the client sent something invalid), where gRPC's own deserializer would end
the call with INTERNAL, the code for a broken server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from p4.v1 import p4runtime_pb2

from p4switch.server.status import abort

SERVICE = "p4.v1.P4Runtime"
Behaviour = Callable[[Any, grpc.ServicerContext], Any]


class Unparsable:
    """A request message whose bytes are not a valid `message_type`."""

    def __init__(self, message_type: str, error: str):
        self.message = f"the request is not a valid {message_type}: {error}"


def _parser(message_type: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return message_type.FromString(data)
        except (DecodeError, RuntimeWarning) as exc:
            return Unparsable(message_type.DESCRIPTOR.full_name, str(exc) or "cannot decode")
    return parse


def _checked(behaviour: Behaviour) -> Behaviour:
    def handle(request: Any, context: grpc.ServicerContext) -> Any:
        if isinstance(request, Unparsable):
            abort(context, "INVALID_ARGUMENT", request.message)
        return behaviour(request, context)
    return handle


def generic_handler(service: Any) -> grpc.GenericRpcHandler:
    """The handler serving `service` (a P4RuntimeServicer); StreamChannel gets `Unparsable`
    items in its request iterator and must answer them itself."""
    pb = p4runtime_pb2
    unary = [("Write", pb.WriteRequest, pb.WriteResponse),
             ("SetForwardingPipelineConfig", pb.SetForwardingPipelineConfigRequest,
              pb.SetForwardingPipelineConfigResponse),
             ("GetForwardingPipelineConfig", pb.GetForwardingPipelineConfigRequest,
              pb.GetForwardingPipelineConfigResponse),
             ("Capabilities", pb.CapabilitiesRequest, pb.CapabilitiesResponse)]
    handlers: dict[str, grpc.RpcMethodHandler] = {
        name: grpc.unary_unary_rpc_method_handler(
            _checked(getattr(service, name)), request_deserializer=_parser(req),
            response_serializer=resp.SerializeToString)
        for name, req, resp in unary}
    handlers["Read"] = grpc.unary_stream_rpc_method_handler(
        _checked(service.Read), request_deserializer=_parser(pb.ReadRequest),
        response_serializer=pb.ReadResponse.SerializeToString)
    handlers["StreamChannel"] = grpc.stream_stream_rpc_method_handler(
        service.StreamChannel, request_deserializer=_parser(pb.StreamMessageRequest),
        response_serializer=pb.StreamMessageResponse.SerializeToString)
    return grpc.method_handlers_generic_handler(SERVICE, handlers)
