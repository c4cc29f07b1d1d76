"""The P4Runtime gRPC server of p4switch."""

from __future__ import annotations

from concurrent import futures

import grpc
from p4.v1 import p4runtime_pb2_grpc

from p4switch.server.service import P4RuntimeService
from p4switch.switch.dataplane import Dataplane
from p4switch.switch.device import Device

__all__ = ["P4RuntimeServer", "P4RuntimeService"]

MAX_WORKERS = 16  # each StreamChannel holds one worker for its lifetime


class ServerStartError(Exception):
    """The gRPC server cannot listen on the requested address."""


class P4RuntimeServer:
    def __init__(self, device: Device, dataplane: Dataplane, device_id: int, address: str):
        self.address = address
        self.service = P4RuntimeService(device, dataplane, device_id)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="p4rt"),
            options=[("grpc.max_receive_message_length", 256 * 1024 * 1024),
                     ("grpc.max_send_message_length", 256 * 1024 * 1024),
                     ("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.service, self._server)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError as exc:
            raise ServerStartError(f"cannot listen on {address}: {exc}") from exc
        if self.port == 0:
            raise ServerStartError(f"cannot listen on {address} (in use or not a local address)")

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float = 0.2) -> None:
        self.service.close_streams()
        self._server.stop(grace).wait(grace + 0.5)
