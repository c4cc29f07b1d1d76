"""The P4Runtime gRPC server of p4switch."""

from __future__ import annotations

import sys
from concurrent import futures


def _import_google_rpc() -> None:
    """Import `google.rpc` (the P4Runtime protobufs need it) without pkg_resources: its
    `__init__` declares the namespace through pkg_resources when that imports, which is ~90 ms,
    most of a switch process's start-up; otherwise it uses pkgutil.extend_path, which gives the
    same package path."""
    if "google.rpc" in sys.modules or "pkg_resources" in sys.modules:
        return
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # import fails: fallback
    try:
        import google.rpc  # noqa: F401
    finally:
        del sys.modules["pkg_resources"]


_import_google_rpc()

import grpc  # noqa: E402

from p4switch.server.handlers import generic_handler  # noqa: E402
from p4switch.server.service import MAX_STREAMS, P4RuntimeService  # noqa: E402
from p4switch.switch.access import GrpcTls  # noqa: E402
from p4switch.switch.dataplane import Dataplane  # noqa: E402
from p4switch.switch.device import Device  # noqa: E402

__all__ = ["MAX_MESSAGE_BYTES", "MAX_STREAMS", "P4RuntimeServer", "P4RuntimeService"]

# Each StreamChannel holds a worker for its lifetime and at most MAX_STREAMS are open (more are
# refused with RESOURCE_EXHAUSTED), so UNARY_WORKERS always remain for Capabilities, Read, Write
# and the pipeline RPCs, whatever the streams do.
UNARY_WORKERS = 8
MAX_WORKERS = MAX_STREAMS + UNARY_WORKERS
# A message beyond this is refused by gRPC (RESOURCE_EXHAUSTED) before it is parsed; PI takes
# 256 MB, which a Python switch would hold several times over while decoding it. The lab's
# largest device config is a few MB.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def _credentials(tls: GrpcTls) -> grpc.ServerCredentials:
    """The server's TLS credentials; raises OSError naming a file that cannot be read."""
    def read(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    root = read(tls.ca) if tls.ca else None
    return grpc.ssl_server_credentials([(read(tls.key), read(tls.cert))],
                                       root_certificates=root,
                                       require_client_auth=tls.client_auth)


class ServerStartError(Exception):
    """The gRPC server cannot listen on the requested address."""


class P4RuntimeServer:
    def __init__(self, device: Device, dataplane: Dataplane, device_id: int, address: str,
                 tls: GrpcTls | None = None):
        self.address = address
        self.service = P4RuntimeService(device, dataplane, device_id)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="p4rt"),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.so_reuseport", 0),
                     # a controller that vanished without closing its stream frees its slot
                     ("grpc.keepalive_time_ms", 60_000),
                     ("grpc.keepalive_timeout_ms", 20_000)])
        self._server.add_generic_rpc_handlers((generic_handler(self.service),))
        try:
            if tls is None:
                self.port = self._server.add_insecure_port(address)
            else:
                self.port = self._server.add_secure_port(address, _credentials(tls))
        except OSError as exc:
            raise ServerStartError(f"cannot read {exc.filename}: {exc.strerror}") from None
        except RuntimeError as exc:
            raise ServerStartError(f"cannot listen on {address}: {exc}") from exc
        if self.port == 0:
            raise ServerStartError(f"cannot listen on {address} (in use or not a local address)")

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float = 0.2) -> None:
        self.service.close_streams()
        self._server.stop(grace).wait(grace + 0.5)
