"""The P4Runtime service (p4runtime 1.4 protobufs), behaving like BMv2's PI server."""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from typing import Any, TypeAlias

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.p4info.index import P4InfoIndex
from p4switch.runtime.errors import RuntimeApiError
from p4switch.server.arbitration import MAX_CONNECTIONS, Arbitrator, Connection, request_election
from p4switch.server.entities import EntityCodec
from p4switch.server.handlers import Unparsable
from p4switch.server.p4info_check import p4info_mismatch
from p4switch.server.packetio import PacketIO
from p4switch.server.status import RpcError, abort, abort_write, stream_error
from p4switch.switch.dataplane import Dataplane
from p4switch.switch.device import Device, ProgramLoadError

log = logging.getLogger("p4switch.p4runtime")

API_VERSION = "1.3.0"
# Streams open but not yet arbitrating are not controllers (PI does not count them either); so
# that they cannot hold every server thread, at most MAX_UNARBITRATED wait at a time, and a
# new stream beyond them ends the one that has waited longest (RESOURCE_EXHAUSTED).
MAX_UNARBITRATED = 16
MAX_STREAMS = MAX_CONNECTIONS + MAX_UNARBITRATED  # StreamChannels open at once
SetReq: TypeAlias = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetReq = p4runtime_pb2.GetForwardingPipelineConfigRequest


@dataclass
class Pipeline:
    """What SetForwardingPipelineConfig installed (or saved, for VERIFY_AND_SAVE)."""

    program: Any
    p4info: p4info_pb2.P4Info
    device_config: bytes
    cookie: p4runtime_pb2.ForwardingPipelineConfig.Cookie | None
    state: Any
    engine: Any
    codec: EntityCodec
    packetio: PacketIO


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: Device, dataplane: Dataplane, device_id: int):
        self.device = device
        self.dataplane = dataplane
        self.device_id = device_id
        self.arbitrator = Arbitrator(device_id)
        self.pipeline: Pipeline | None = None
        self.saved: Pipeline | None = None
        self._config_lock = threading.Lock()
        self._streams: set[Connection] = set()
        self._unarbitrated: list[Connection] = []  # oldest first
        self._streams_lock = threading.Lock()
        # compiled programs by device-config digest (the one given on the command line too)
        self._programs: dict[bytes, Any] = {}
        if device.program is not None:
            self._programs[hashlib.sha256(device.program.device_config()).digest()] = \
                device.program
        dataplane.packet_in = self._on_packet_in

    # -- helpers ---------------------------------------------------------------------------
    def _check_device(self, context: grpc.ServicerContext, device_id: int) -> None:
        if device_id != self.device_id:
            abort(context, "NOT_FOUND",
                  f"unknown device id {device_id}: this switch is device {self.device_id}")

    def _check_primary(self, context: grpc.ServicerContext, request: Any) -> None:
        """Write and SetForwardingPipelineConfig come from the primary only (spec §12.2 and
        §13.1, in this order): an unknown role is NOT_FOUND; a request without an election id,
        or with one that is not the primary's, is PERMISSION_DENIED, also while no stream is
        open (PI accepts requests without an election id then)."""
        if request.role:
            abort(context, "NOT_FOUND", f"unknown role {request.role!r}: this switch has the "
                  "default role only")
        election = request_election(request)
        if election is None:
            abort(context, "PERMISSION_DENIED", "Not primary: the request has no election id")
        if not self.arbitrator.is_primary(election):
            abort(context, "PERMISSION_DENIED", "Not primary")

    def _require_pipeline(self, context: grpc.ServicerContext) -> Pipeline:
        pipeline = self.pipeline
        if pipeline is None:
            abort(context, "FAILED_PRECONDITION", "No forwarding pipeline config set")
        assert pipeline is not None  # abort() raised
        return pipeline

    # -- RPCs ------------------------------------------------------------------------------
    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def Write(self, request, context):
        self._check_device(context, request.device_id)
        self._check_primary(context, request)
        pipeline = self._require_pipeline(context)
        if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
            abort(context, "UNIMPLEMENTED",
                  "Support for atomic write modes has not been implemented yet")
        results: list[tuple[str, str] | None] = []
        lock = self.device.lock
        for update in request.updates:  # locked per update: big batches do not stall packets
            try:
                with lock:
                    self.device.note_write()
                    pipeline.codec.write(update)
                results.append(None)
            except RuntimeApiError as exc:
                results.append((exc.code, exc.message))
            except Exception as exc:  # a bug must fail the update, not the switch
                log.exception("Write failed")
                results.append(("UNKNOWN", f"internal error: {type(exc).__name__}: {exc}"))
        if any(r is not None for r in results):
            abort_write(context, results)
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):
        self._check_device(context, request.device_id)
        pipeline = self._require_pipeline(context)
        response = p4runtime_pb2.ReadResponse()
        try:
            with self.device.lock:
                self.device.publish()
                for entity in request.entities:
                    response.entities.extend(pipeline.codec.read(entity))
        except RuntimeApiError as exc:
            abort(context, exc.code, exc.message)
        except Exception as exc:  # a bug fails the request, not the switch
            log.exception("Read failed")
            abort(context, "UNKNOWN", f"internal error: {type(exc).__name__}: {exc}")
        yield response

    def SetForwardingPipelineConfig(self, request, context):
        self._check_device(context, request.device_id)
        self._check_primary(context, request)
        try:
            with self._config_lock:
                self._set_config(request)
        except (RuntimeApiError, RpcError) as exc:
            abort(context, exc.code, exc.message)
        except Exception as exc:  # the program cannot be instantiated: say why, keep running
            log.exception("SetForwardingPipelineConfig failed")
            abort(context, "UNKNOWN", f"Error in first phase of device update: "
                  f"{type(exc).__name__}: {exc}")
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        self._check_device(context, request.device_id)
        pipeline = self._require_pipeline(context)
        config = p4runtime_pb2.ForwardingPipelineConfig()
        rt = request.response_type
        if rt in (GetReq.ALL, GetReq.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(pipeline.p4info)
        if rt in (GetReq.ALL, GetReq.DEVICE_CONFIG_AND_COOKIE):
            config.p4_device_config = pipeline.device_config
        if rt not in (GetReq.ALL, GetReq.P4INFO_AND_COOKIE, GetReq.DEVICE_CONFIG_AND_COOKIE,
                      GetReq.COOKIE_ONLY):
            abort(context, "INVALID_ARGUMENT",
                  "Invalid response_type in GetForwardingPipelineConfigRequest")
        if pipeline.cookie is not None:
            config.cookie.CopyFrom(pipeline.cookie)
        return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=config)

    # -- pipeline config -------------------------------------------------------------------
    def _set_config(self, request: SetReq) -> None:
        action = request.action
        if action == SetReq.UNSPECIFIED:
            raise RuntimeApiError("INVALID_ARGUMENT", "Invalid SetForwardingPipeline action")
        if action not in (SetReq.VERIFY, SetReq.VERIFY_AND_SAVE, SetReq.VERIFY_AND_COMMIT,
                          SetReq.COMMIT, SetReq.RECONCILE_AND_COMMIT):
            raise RuntimeApiError("INVALID_ARGUMENT", f"unknown action {action}")
        if action == SetReq.COMMIT:
            if self.saved is None:
                raise RuntimeApiError("FAILED_PRECONDITION",
                                      "COMMIT without a config saved by VERIFY_AND_SAVE")
            self._install(self.saved)
            self.saved = None
            return
        program = self._verify(request.config)
        if action == SetReq.VERIFY:
            return
        pipeline = self._build(program, request.config)
        if action == SetReq.VERIFY_AND_SAVE:
            self.saved = pipeline
            return
        old = self.pipeline
        if action == SetReq.RECONCILE_AND_COMMIT and old is not None:
            with self.device.lock:
                entities = old.codec.snapshot()
            for entity in entities:
                update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=entity)
                try:
                    pipeline.codec.write(update)
                except RuntimeApiError as exc:
                    raise RpcError("UNKNOWN", f"Error when reconciling config: {exc}") from None
        self._install(pipeline)

    def _verify(self, config: p4runtime_pb2.ForwardingPipelineConfig) -> Any:
        from p4switch.compiler import CompiledProgram
        from p4switch.p4info import build_p4info

        if not config.HasField("p4info"):
            raise RuntimeApiError("INVALID_ARGUMENT", "the config has no P4Info")
        if config.p4_device_config:
            key = hashlib.sha256(config.p4_device_config).digest()
            program = self._programs.get(key)
            if program is None:
                try:
                    program = CompiledProgram.from_device_config(config.p4_device_config)
                except Exception as exc:
                    raise RuntimeApiError("INVALID_ARGUMENT",
                                          f"cannot load the device config: {exc}") from None
                self._programs = {key: program}  # the last one: a re-push skips compiling
        elif self.device.program is not None:
            program = self.device.program  # the program given on the command line
        else:
            raise RuntimeApiError("INVALID_ARGUMENT", "empty device config and no program "
                                  "loaded: send the p4switch-compile output as p4_device_config")
        problem = p4info_mismatch(config.p4info, build_p4info(program.model))
        if problem:
            raise RuntimeApiError("INVALID_ARGUMENT", problem)
        return program

    def _build(self, program: Any, config: p4runtime_pb2.ForwardingPipelineConfig) -> Pipeline:
        try:
            state, engine = self.device.build(program)
        except ProgramLoadError as exc:  # --pipeline native, and no native build here
            raise RuntimeApiError("FAILED_PRECONDITION", str(exc)) from None
        p4info = p4info_pb2.P4Info()
        p4info.CopyFrom(config.p4info)
        codec = EntityCodec(p4info, P4InfoIndex(p4info), program.model, state)
        cookie = None
        if config.HasField("cookie"):
            cookie = p4runtime_pb2.ForwardingPipelineConfig.Cookie()
            cookie.CopyFrom(config.cookie)
        device_config = config.p4_device_config or program.device_config()
        return Pipeline(program, p4info, device_config, cookie, state, engine, codec,
                        PacketIO(p4info))

    def _install(self, pipeline: Pipeline) -> None:
        pipeline.codec.attach_digests(self.arbitrator.send_to_primary)
        self.pipeline = pipeline  # first: packet-ins of the new program use its P4Info
        self.device.install(pipeline.program, pipeline.state, pipeline.engine)
        log.info("pipeline %s installed", pipeline.program.name)

    # -- stream ----------------------------------------------------------------------------
    def close_streams(self) -> None:
        """End every StreamChannel (shutdown)."""
        with self._streams_lock:
            for conn in self._streams:
                conn.send(None)

    def StreamChannel(self, request_iterator, context):
        conn = Connection()
        with self._streams_lock:
            if len(self._unarbitrated) >= MAX_UNARBITRATED:
                oldest = self._unarbitrated.pop(0)
                oldest.send(RpcError("RESOURCE_EXHAUSTED", "Too many streams waiting to "
                                     f"arbitrate (at most {MAX_UNARBITRATED}): this one "
                                     "waited longest"))
            admitted = len(self._streams) < MAX_STREAMS
            if admitted:
                self._streams.add(conn)
                self._unarbitrated.append(conn)
        if not admitted:  # every stream holds a worker thread
            abort(context, "RESOURCE_EXHAUSTED", f"Too many connections: this switch serves "
                  f"at most {MAX_STREAMS} StreamChannels")
        reader = threading.Thread(target=self._read_stream, args=(request_iterator, conn),
                                  name="p4rt-stream", daemon=True)
        reader.start()
        context.add_callback(lambda: self._end_stream(conn))
        try:
            while True:
                msg = conn.outbox.get()
                if msg is None:
                    return
                if isinstance(msg, RpcError):
                    abort(context, msg.code, msg.message)
                yield msg
        finally:
            self._end_stream(conn)

    def _end_stream(self, conn: Connection) -> None:
        """The stream is over (requests ended, the RPC terminated, or it failed): it leaves the
        arbitration at once, so that a reconnect with its election id is not refused, and
        frees its slot. Idempotent."""
        self.arbitrator.remove(conn)
        with self._streams_lock:
            self._streams.discard(conn)
            if conn in self._unarbitrated:
                self._unarbitrated.remove(conn)
        conn.send(None)

    def _read_stream(self, requests, conn: Connection) -> None:
        """Handle a stream's requests (its own thread); the stream ends with the requests."""
        try:
            for req in requests:
                if isinstance(req, Unparsable):
                    raise RpcError("INVALID_ARGUMENT", req.message)
                which = req.WhichOneof("update")
                if which == "arbitration":
                    self._arbitrate(req.arbitration, conn)
                elif which == "packet" and conn.arbitrated:
                    self._packet_out(conn, req.packet)
                elif which == "digest_ack" and self.arbitrator.primary() is conn:
                    pipeline = self.pipeline
                    if pipeline is not None:
                        ack = req.digest_ack
                        pipeline.codec.digests.ack(ack.digest_id, ack.list_id)
        except RpcError as exc:
            self.arbitrator.remove(conn)
            conn.send(exc)
        except Exception:  # the RPC was cancelled (or a bug): the stream ends either way
            log.debug("stream %d ended", conn.id, exc_info=True)
        self._end_stream(conn)

    def _arbitrate(self, arb: p4runtime_pb2.MasterArbitrationUpdate, conn: Connection) -> None:
        """Spec §5.3: an unknown device is NOT_FOUND on a stream's first arbitration and
        FAILED_PRECONDITION later (its device cannot change); a role is INVALID_ARGUMENT (this
        switch knows no role scheme: the default role, full pipeline access, only)."""
        if arb.device_id != self.device_id:
            code = "FAILED_PRECONDITION" if conn.arbitrated else "NOT_FOUND"
            raise RpcError(code, f"Invalid device id {arb.device_id}: this switch is device "
                           f"{self.device_id}")
        if arb.HasField("role"):
            raise RpcError("INVALID_ARGUMENT", f"role {arb.role.name!r}: this switch has the "
                           "default role only (leave the role unset)")
        try:
            self.arbitrator.arbitrate(conn, request_election(arb))
        except RuntimeApiError as exc:
            raise RpcError(exc.code, exc.message) from None
        with self._streams_lock:
            if conn in self._unarbitrated:
                self._unarbitrated.remove(conn)

    def _packet_out(self, conn: Connection, packet: p4runtime_pb2.PacketOut) -> None:
        pipeline = self.pipeline
        if pipeline is None or self.arbitrator.primary() is not conn:
            return
        if self.device.cpu_port is None:
            log.warning("packet-out dropped: the switch has no --cpu-port")
            return
        try:
            frame = pipeline.packetio.frame_from_packet_out(packet)
        except RuntimeApiError as exc:  # reported on the stream, which stays open (as PI)
            conn.send(stream_error(exc, packet))
            return
        self.dataplane.inject(self.device.cpu_port, frame)

    def _on_packet_in(self, frame: bytes) -> None:
        pipeline = self.pipeline
        if pipeline is None:
            return
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.packet.CopyFrom(pipeline.packetio.packet_in_from_frame(frame))
        self.arbitrator.send_to_primary(msg)
