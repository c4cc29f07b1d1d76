"""The status codes a P4Runtime call ended with, as google.rpc code names."""

from __future__ import annotations

import grpc
from sw_p4rt import Client, details


def rpc_code(call, *args, **kwargs) -> str:
    """Call `call`; "OK", or the name of the gRPC status it failed with."""
    try:
        result = call(*args, **kwargs)
        if hasattr(result, "__next__"):
            list(result)
    except grpc.RpcError as exc:
        return exc.code().name
    return "OK"


def write_codes(client: Client, *updates) -> list[str]:
    """One code per update of a Write batch: the per-update p4.v1.Error codes of a failed
    batch (gRPC status UNKNOWN with details, as the spec's batch error reporting says)."""
    try:
        client.write(*updates)
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.UNKNOWN, f"batch status {exc.code()}: {exc.details()}"
        return [code for code, _ in details(exc)]
    return ["OK"] * len(updates)


def stream_end_code(client: Client, timeout: float = 5.0) -> str:
    """How `client`'s stream ended ("OK" when it closed without an error); fails if it is
    still open after `timeout`."""
    while True:
        msg = client.incoming.get(timeout=timeout)
        if msg is None:
            err = client.stream_error
            return "OK" if err is None else err.code().name
