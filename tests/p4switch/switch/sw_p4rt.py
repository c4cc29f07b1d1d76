"""A bare P4Runtime client for the switch tests (streams, writes with per-update errors)."""

from __future__ import annotations

import importlib.util
import queue
import subprocess
import sys
import threading
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from sw_proc import REPO

PROGRAMS = Path(__file__).resolve().parent / "programs"


def compile_program(p4file: Path, outdir: Path) -> tuple[Path, Path]:
    """(p4info path, device config path) written by p4switch-compile."""
    if importlib.util.find_spec("p4switch.compiler") is None:
        pytest.skip("the p4switch compiler (p4switch.compiler) is not available")
    res = subprocess.run([sys.executable, "-m", "p4switch.cli.compile", str(p4file), "-o",
                          str(outdir)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return (outdir / f"{p4file.stem}.p4info.txtpb", outdir / f"{p4file.stem}.p4switch.json")


def load_p4info(path: Path) -> p4info_pb2.P4Info:
    p4info = p4info_pb2.P4Info()
    text_format.Merge(path.read_text(), p4info)
    return p4info


UNSET = object()  # an arbitration without an election id


class Client:
    """A P4Runtime client; with an election id (or UNSET) it opens a stream and arbitrates,
    with None it has no stream (`open_stream()` opens a silent one)."""

    def __init__(self, addr: str, device_id: int = 0, election: int | None | object = 1,
                 credentials: grpc.ChannelCredentials | None = None,
                 options: tuple = ()):
        self.channel = (grpc.insecure_channel(addr, options) if credentials is None
                        else grpc.secure_channel(addr, credentials, options))
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election: int | None = None
        self._out: queue.Queue = queue.Queue()
        self.incoming: queue.Queue = queue.Queue()
        self.stream_error: grpc.RpcError | None = None
        self._stream = None
        if election is UNSET:
            self.open_stream()
            msg = p4runtime_pb2.StreamMessageRequest()
            msg.arbitration.device_id = device_id
            self._out.put(msg)
        elif election is not None:
            self.open_stream()
            self.arbitrate(election)  # type: ignore[arg-type]

    def open_stream(self) -> None:
        self._stream = self.stub.StreamChannel(iter(self._out.get, None))
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        try:
            for msg in self._stream:
                self.incoming.put(msg)
        except grpc.RpcError as exc:
            self.stream_error = exc
        self.incoming.put(None)

    def arbitrate(self, election: int) -> None:
        msg = p4runtime_pb2.StreamMessageRequest()
        msg.arbitration.device_id = self.device_id
        msg.arbitration.election_id.high = election >> 64
        msg.arbitration.election_id.low = election & ((1 << 64) - 1)
        self.election = election
        self._out.put(msg)

    def send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._out.put(msg)

    def next(self, kind: str, timeout: float = 5.0):
        """The next stream message of this kind ('arbitration', 'packet', 'digest')."""
        while True:
            msg = self.incoming.get(timeout=timeout)
            if msg is None:
                raise EOFError(f"stream closed: {self.stream_error}")
            if msg.WhichOneof("update") == kind:
                return getattr(msg, kind)

    def send_packet(self, payload: bytes, metadata: dict[int, bytes]) -> None:
        msg = p4runtime_pb2.StreamMessageRequest()
        msg.packet.payload = payload
        for mid, value in metadata.items():
            msg.packet.metadata.add(metadata_id=mid, value=value)
        self._out.put(msg)

    def ack_digest(self, digest_id: int, list_id: int) -> None:
        msg = p4runtime_pb2.StreamMessageRequest()
        msg.digest_ack.digest_id, msg.digest_ack.list_id = digest_id, list_id
        self._out.put(msg)

    def _election(self, req) -> None:
        if self.election is not None:
            req.election_id.high = self.election >> 64
            req.election_id.low = self.election & ((1 << 64) - 1)

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes,
                     action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT):
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                              action=action)
        self._election(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        return self.stub.SetForwardingPipelineConfig(req, timeout=30)

    def write(self, *updates: p4runtime_pb2.Update) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        self._election(req)
        req.updates.extend(updates)
        self.stub.Write(req, timeout=10)

    def write_errors(self, *updates: p4runtime_pb2.Update) -> list[tuple[str, str]]:
        """Write and return one (code name, message) per update ("OK" for successes)."""
        try:
            self.write(*updates)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.UNKNOWN, exc
            return details(exc)
        return [("OK", "")] * len(updates)

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        return [e for resp in self.stub.Read(req, timeout=10) for e in resp.entities]

    def close(self) -> None:
        self._out.put(None)
        self.channel.close()


def details(exc: grpc.RpcError) -> list[tuple[str, str]]:
    from google.rpc import code_pb2

    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for any_ in status.details:
                err = p4runtime_pb2.Error()
                any_.Unpack(err)
                out.append((code_pb2.Code.Name(err.canonical_code), err.message))
            return out
    raise AssertionError("no grpc-status-details-bin in the reply")


def update(kind: str, **entity) -> p4runtime_pb2.Update:
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind))
    for name, value in entity.items():
        getattr(u.entity, name).CopyFrom(value)
    return u
