"""A small P4Runtime client: connect, arbitrate, set the pipeline, write, read, packet I/O.

One `P4RuntimeClient` talks to one device over gRPC with the `p4runtime` protobufs. The stream
channel runs in a reader thread that records the arbitration outcome and queues packet-ins,
digests and stream errors for whoever wants them. Works the same against p4switch and BMv2's
`simple_switch_grpc` (PI): nothing here is target-specific.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from topos.errors import FabricLabError

log = logging.getLogger(__name__)

Update: TypeAlias = p4runtime_pb2.Update
Entity: TypeAlias = p4runtime_pb2.Entity
_STOP = object()


def code_name(code: int) -> str:
    try:
        return code_pb2.Code.Name(code)
    except ValueError:
        return str(code)


class P4RuntimeError(FabricLabError):
    """A failed P4Runtime call: which device, which operation, the gRPC code and detail."""

    def __init__(self, device: str, operation: str, code: str, detail: str):
        self.device, self.operation, self.code, self.detail = device, operation, code, detail
        super().__init__(f"{device}: {operation} failed: {code}: {detail}")


@dataclass
class UpdateFailure:
    index: int
    update: Update
    code: str
    message: str


class WriteError(P4RuntimeError):
    """A Write with per-update errors (from `grpc-status-details-bin`), in batch order."""

    def __init__(self, device: str, code: str, detail: str, failures: list[UpdateFailure]):
        self.failures = failures
        super().__init__(device, "Write", code, detail)


def _rpc_error(device: str, operation: str, err: grpc.RpcError) -> P4RuntimeError:
    return P4RuntimeError(device, operation, err.code().name, err.details() or "")


def _write_failures(err: grpc.RpcError, updates: Sequence[Update]) -> list[UpdateFailure]:
    """Decode PI's per-update `p4.v1.Error`s; failures only (code OK entries are dropped)."""
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        out = []
        for index, detail in enumerate(status.details):
            error = p4runtime_pb2.Error()
            if not detail.Unpack(error) or error.canonical_code == code_pb2.OK:
                continue
            update = updates[index] if index < len(updates) else Update()
            out.append(UpdateFailure(index, update, code_name(error.canonical_code),
                                     error.message))
        return out
    return []


class P4RuntimeClient:
    """A primary-controller connection to one P4Runtime device."""

    def __init__(self, address: str, device_id: int, *, election_id: tuple[int, int] = (0, 1),
                 name: str | None = None, timeout: float = 10.0):
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.name = name or f"device {device_id} at {address}"
        self.timeout = timeout
        self.packet_ins: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue()
        self.digests: queue.Queue[p4runtime_pb2.DigestList] = queue.Queue()
        self.stream_errors: queue.Queue[p4runtime_pb2.StreamError] = queue.Queue()
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._requests: queue.Queue = queue.Queue()
        self._arbitration: queue.Queue = queue.Queue()
        self._reader: threading.Thread | None = None
        self.stream_closed: tuple[str, str] | None = None  # (code, detail) once the stream ended

    # ---- connection ----------------------------------------------------------------------
    def connect(self) -> P4RuntimeClient:
        """Open the channel and the stream, and become primary; raise P4RuntimeError if not."""
        self._channel = grpc.insecure_channel(self.address)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            self.close()
            raise P4RuntimeError(self.name, "connect", "UNAVAILABLE",
                                 f"no gRPC server answered at {self.address} within "
                                 f"{self.timeout:g} s") from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        stream = self._stub.StreamChannel(iter(self._next_request, _STOP))
        self._reader = threading.Thread(target=self._read_stream, args=(stream,),
                                        name=f"p4rt-stream-{self.device_id}", daemon=True)
        self._reader.start()
        self._arbitrate()
        return self

    def _next_request(self):
        return self._requests.get()

    def _arbitrate(self) -> None:
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.high = self.election_id[0]
        request.arbitration.election_id.low = self.election_id[1]
        self._requests.put(request)
        try:
            reply = self._arbitration.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            raise P4RuntimeError(self.name, "arbitration", "DEADLINE_EXCEEDED",
                                 f"no MasterArbitrationUpdate reply within {self.timeout:g} s"
                                 ) from None
        if isinstance(reply, tuple):  # the stream ended instead
            self.close()
            raise P4RuntimeError(self.name, "arbitration", *reply)
        if reply.status.code != code_pb2.OK:
            primary = (reply.election_id.high, reply.election_id.low)
            self.close()
            raise P4RuntimeError(
                self.name, "arbitration", code_name(reply.status.code),
                f"not primary with election id {self.election_id}: the primary holds "
                f"{primary} ({reply.status.message or 'another controller is connected'})")

    def _read_stream(self, stream) -> None:
        try:
            for message in stream:
                kind = message.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitration.put(message.arbitration)
                elif kind == "packet":
                    self.packet_ins.put(message.packet)
                elif kind == "digest":
                    self.digests.put(message.digest)
                elif kind == "error":
                    log.warning("%s: stream error %s: %s", self.name,
                                code_name(message.error.canonical_code), message.error.message)
                    self.stream_errors.put(message.error)
            self.stream_closed = ("UNAVAILABLE", "the server closed the stream")
        except grpc.RpcError as err:
            self.stream_closed = (err.code().name, err.details() or "")
        self._arbitration.put(self.stream_closed)

    def close(self) -> None:
        """End the stream (giving up primary) and the channel; safe to call twice, also after
        an interrupted call."""
        channel, self._channel = self._channel, None
        reader, self._reader = self._reader, None
        self._stub = None
        self._requests.put(_STOP)
        if channel is not None:
            channel.close()  # cancels the stream: the reader ends at once
        if reader is not None:
            reader.join(timeout=2.0)

    def __enter__(self) -> P4RuntimeClient:
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self._stub is None:
            raise P4RuntimeError(self.name, "call", "FAILED_PRECONDITION", "not connected")
        return self._stub

    def _election(self, msg) -> None:
        msg.election_id.high, msg.election_id.low = self.election_id

    # ---- pipeline ------------------------------------------------------------------------
    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int = 0,
                     action: int = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
                     ) -> None:
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id,
                                                                   action=action)
        self._election(request)
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        request.config.cookie.cookie = cookie
        try:
            self.stub.SetForwardingPipelineConfig(request, timeout=max(self.timeout, 60))
        except grpc.RpcError as err:
            raise _rpc_error(self.name, "SetForwardingPipelineConfig", err) from None

    def pipeline(self, response_type: int = p4runtime_pb2.GetForwardingPipelineConfigRequest.ALL
                 ) -> p4runtime_pb2.ForwardingPipelineConfig | None:
        """The installed pipeline config, or None when none is set (FAILED_PRECONDITION)."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=response_type)
        try:
            return self.stub.GetForwardingPipelineConfig(request, timeout=self.timeout).config
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return None
            raise _rpc_error(self.name, "GetForwardingPipelineConfig", err) from None

    def pipeline_cookie(self) -> int | None:
        config = self.pipeline(p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY)
        if config is None or not config.HasField("cookie"):
            return None
        return config.cookie.cookie

    # ---- write / read --------------------------------------------------------------------
    def write(self, updates: Sequence[Update]) -> None:
        """Write one batch; raises WriteError naming every failed update."""
        if not updates:
            return
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id,
                                             atomicity=p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR)
        self._election(request)
        request.updates.extend(updates)
        try:
            self.stub.Write(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise WriteError(self.name, err.code().name, err.details() or "",
                             _write_failures(err, updates)) from None

    def read(self, entities: Iterable[Entity]) -> list[Entity]:
        """Read with (possibly wildcard) entities; returns every entity the device sends."""
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.extend(entities)
        try:
            return [e for reply in self.stub.Read(request, timeout=self.timeout)
                    for e in reply.entities]
        except grpc.RpcError as err:
            raise _rpc_error(self.name, "Read", err) from None

    def read_counter(self, counter_id: int, index: int | None = None) -> dict[int, tuple[int, int]]:
        """Counter cells as {index: (packets, bytes)}; every cell when `index` is None."""
        return self.read_counters([counter_id], index)[counter_id]

    def read_counters(self, counter_ids: Iterable[int], index: int | None = None
                      ) -> dict[int, dict[int, tuple[int, int]]]:
        """Several counters in one Read: {counter id: {index: (packets, bytes)}}, every cell of
        each when `index` is None."""
        entities = []
        out: dict[int, dict[int, tuple[int, int]]] = {}
        for counter_id in counter_ids:
            entity = Entity()
            entity.counter_entry.counter_id = counter_id
            if index is not None:
                entity.counter_entry.index.index = index
            entities.append(entity)
            out[counter_id] = {}
        for e in self.read(entities):
            entry = e.counter_entry
            out[entry.counter_id][entry.index.index] = (entry.data.packet_count, entry.data.byte_count)
        return out

    # ---- packet I/O ----------------------------------------------------------------------
    def packet_out(self, payload: bytes, metadata: Sequence[tuple[int, bytes]] = ()) -> None:
        """Send a packet-out; `metadata` is (metadata id, canonical bytes) of packet_out fields."""
        request = p4runtime_pb2.StreamMessageRequest()
        request.packet.payload = payload
        for metadata_id, value in metadata:
            request.packet.metadata.add(metadata_id=metadata_id, value=value)
        self._requests.put(request)
