"""The v1model pipeline driver, with BMv2 simple_switch's semantics.

The generated code (p4switch/backend) provides the parser, the controls and the deparser;
this module strings them together in `simple_switch`'s order (targets/simple_switch/
simple_switch.cpp): parser -> verify checksum -> ingress -> clone (I2E) -> digests ->
resubmit -> multicast -> drop -> enqueue; dequeue -> egress -> clone (E2E) -> drop ->
compute checksum + deparse -> recirculate (whole) or truncate -> transmit.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .backend.rt import AssertFailed, PacketContext, ParserError

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
_MAX_RECIRCULATIONS = 16


def _clock() -> Callable[[], int]:
    start = time.monotonic_ns()
    return lambda: (time.monotonic_ns() - start) // 1000


@dataclass
class EngineConfig:
    drop_port: int = 511
    cpu_port: int | None = None
    priority_queues: int = 1
    now_us: Callable[[], int] = field(default_factory=_clock)
    log: Callable[[str], None] | None = None


class Queued:
    """A packet between ingress and egress: its queue (egress port, priority), headers,
    metadata and unparsed payload."""

    __slots__ = ("egress_port", "hdr", "length", "meta", "payload", "priority",
                 "recirculations", "sm", "truncate")

    def __init__(self, egress_port: int, priority: int, hdr, meta, sm, payload: bytes,
                 length: int, truncate: int | None, recirculations: int):
        self.egress_port = egress_port
        self.priority = priority
        self.hdr = hdr
        self.meta = meta
        self.sm = sm
        self.payload = payload
        self.length = length  # the ingress packet length (BMv2's PACKET_LENGTH register)
        self.truncate = truncate  # bytes to keep, from truncate() in ingress
        self.recirculations = recirculations

    def __repr__(self) -> str:
        return f"Queued(egress_port={self.egress_port}, priority={self.priority})"


_NO_PACKETS: tuple[Queued, ...] = ()


class Engine:
    def __init__(self, stages: dict, state, config: EngineConfig,
                 field_lists: dict[int, list[str]]):
        self.state = state
        self.config = config
        self._parser = stages["parser"]
        self._verify = stages["verify_checksum"]
        self._ingress = stages["ingress"]
        self._egress = stages["egress"]
        self._compute = stages["compute_checksum"]
        self._deparser = stages["deparser"]
        self._new_hdr = stages["new_headers"]
        self._new_meta = stages["new_meta"]
        self._new_sm = stages["new_sm"]
        self._field_lists = field_lists
        self._errors = stages.get("errors", ())
        self._drop = config.drop_port
        self._queues = config.priority_queues
        self._now = config.now_us
        self._log = config.log
        self._pre = state.pre
        self._digests = state.digests
        self.internal_errors = 0
        self.pipeline = "python"  # "native": the stages are the native module's

    # ---- ingress -------------------------------------------------------------------------
    def _parse(self, ctx: PacketContext, data: bytes, port: int, instance: int, meta=None):
        hdr = self._new_hdr()
        meta = meta if meta is not None else self._new_meta()
        sm = self._new_sm()
        sm.ingress_port = port
        sm.instance_type = instance
        sm.packet_length = len(data)
        sm.ingress_global_timestamp = self._now() & 0xFFFFFFFFFFFF
        try:
            off = self._parser(ctx, data, hdr, meta, sm)
        except ParserError as e:
            off = ctx.parser_offset
            if e.code >= 0:
                sm.parser_error = e.code
        ctx.payload = data[off:]
        return hdr, meta, sm

    def ingress(self, port: int, data: bytes) -> list[Queued]:
        """Run a received packet through parser, verify checksum and ingress; returns the
        packets to enqueue. Never raises: a packet the generated code fails on (a bug, never
        a malformed packet) is dropped, logged and counted in `internal_errors`."""
        try:
            return self._run_ingress(port, bytes(data), NORMAL, None, 0)
        except Exception as e:  # the switch must survive any packet
            self._internal_error("ingress", e)
            return []

    def _internal_error(self, where: str, e: Exception) -> None:
        self.internal_errors += 1
        self._trace(f"internal error in {where}, packet dropped: {type(e).__name__}: {e}")

    def _run_ingress(self, port: int, data: bytes, instance: int, meta, depth: int
                     ) -> list[Queued]:
        ctx = PacketContext(len(data))
        log = self._log
        if log is not None:
            log(f"ingress: port {port}, {len(data)} bytes, instance_type {instance}")
        try:
            hdr, meta, sm = self._parse(ctx, data, port, instance, meta)
            if log is not None and sm.parser_error:
                log(f"parser: error {self._error_name(sm.parser_error)}")
            self._verify(ctx, hdr, meta, sm)
            self._ingress(ctx, hdr, meta, sm)
        except AssertFailed as e:
            self._trace(f"assert failed at {e}; packet dropped")
            return []
        if log is not None:
            log(self._ingress_decision(ctx, sm))
        if ctx.clone is None and ctx.digest is None and ctx.resubmit is None \
                and not sm.mcast_grp:  # the common case: one packet, or none
            return self._unicast(hdr, meta, sm, ctx, len(data), depth)
        out: list[Queued] = []
        if ctx.clone is not None:
            out.extend(self._ingress_clone(ctx, data, port, meta))
        if ctx.digest is not None:
            name, values = ctx.digest
            self._digests.emit(name, values())
        if ctx.resubmit is not None:
            if depth >= _MAX_RECIRCULATIONS:
                return out
            kept = self._preserved(meta, ctx.resubmit)
            return out + self._run_ingress(0, data, RESUBMIT, kept, depth + 1)
        grp = sm.mcast_grp
        if grp:
            sm.instance_type = REPLICATION
            out.extend(self._replicate(hdr, meta, sm, ctx.payload, len(data),
                                       self._pre.replicas(grp), depth))
            return out
        return out + self._unicast(hdr, meta, sm, ctx, len(data), depth)

    def _unicast(self, hdr, meta, sm, ctx: PacketContext, length: int, depth: int
                 ) -> list[Queued]:
        """The packet for egress_spec's queue, or none (dropped)."""
        if sm.egress_spec == self._drop:
            return []
        sm.instance_type = NORMAL
        q = self._enqueue(sm.egress_spec, hdr, meta, sm, ctx.payload, length, ctx.truncate,
                          depth)
        return [] if q is None else [q]

    def _ingress_decision(self, ctx: PacketContext, sm) -> str:
        parts = []
        if ctx.clone is not None:
            parts.append(f"clone to session {ctx.clone[0]}")
        if ctx.digest is not None:
            parts.append(f"digest {ctx.digest[0]}")
        if ctx.resubmit is not None:
            parts.append("resubmit")
        elif sm.mcast_grp:
            parts.append(f"multicast group {sm.mcast_grp}")
        elif sm.egress_spec == self._drop:
            parts.append("drop")
        else:
            parts.append(f"egress_spec {sm.egress_spec}, priority {sm.priority}")
        return "end of ingress: " + ", ".join(parts)

    def _error_name(self, code: int) -> str:
        names = self._errors
        return names[code] if 0 <= code < len(names) else str(code)

    def _enqueue(self, port: int, hdr, meta, sm, payload: bytes, length: int,
                 truncate: int | None, depth: int) -> Queued | None:
        prio = sm.priority
        if prio >= self._queues:
            self._trace("priority out of range, dropping packet")
            return None
        return Queued(port, prio, hdr, meta, sm, payload, length, truncate, depth)

    def _replicate(self, hdr, meta, sm, payload: bytes, length: int, replicas, depth: int
                   ) -> list[Queued]:
        """A copy per (port, rid). Copies start whole (BMv2's Packet::clone_*): a truncate()
        before them cuts none."""
        out = []
        for port, rid in replicas:
            copy_sm = sm._copy()
            copy_sm.egress_rid = rid
            q = self._enqueue(port, hdr._copy(), meta._copy(), copy_sm, payload, length, None,
                              depth)
            if q is not None:
                out.append(q)
        return out

    def _preserved(self, meta, index: int):
        fresh = self._new_meta()
        for name in self._field_lists.get(index, ()):
            value = getattr(meta, name)
            if hasattr(value, "_copy"):
                getattr(fresh, name)._assign(value)
            else:
                setattr(fresh, name, value)
        return fresh

    def _clone_targets(self, session: int):
        return self._pre.clone_targets(session & 0xFFFF)

    def _ingress_clone(self, ctx: PacketContext, data: bytes, port: int, meta) -> list[Queued]:
        assert ctx.clone is not None  # the caller checked
        session, flist = ctx.clone
        targets = self._clone_targets(session)
        if not targets:
            return []
        cctx = PacketContext(len(data))
        hdr, _, _ = self._parse(cctx, data, port, INGRESS_CLONE)
        kept = self._preserved(meta, flist)
        sm = self._new_sm()
        sm.instance_type = INGRESS_CLONE
        return self._replicate(hdr, kept, sm, cctx.payload, len(data), targets, 0)

    # ---- egress --------------------------------------------------------------------------
    def egress(self, item: Queued, enq_timestamp: int = 0, enq_qdepth: int = 0,
               deq_qdepth: int = 0, deq_timedelta: int = 0
               ) -> tuple[list[tuple[int, bytes]], list[Queued]]:
        """Egress, egress clone, drop, deparse, recirculate for a dequeued packet; returns
        (frames to transmit, new packets to enqueue). Never raises (see `ingress`)."""
        frame, new = self.egress_frame(item, enq_timestamp, enq_qdepth, deq_qdepth,
                                       deq_timedelta)
        return ([] if frame is None else [(item.egress_port, frame)]), list(new)

    def egress_frame(self, item: Queued, enq_timestamp: int = 0, enq_qdepth: int = 0,
                     deq_qdepth: int = 0, deq_timedelta: int = 0
                     ) -> tuple[bytes | None, Sequence[Queued]]:
        """`egress` as the switch's data plane calls it: (the frame to transmit on
        `item.egress_port` or None, new packets to enqueue)."""
        try:
            return self._run_egress(item, enq_timestamp, enq_qdepth, deq_qdepth,
                                    deq_timedelta)
        except Exception as e:  # the switch must survive any packet
            self._internal_error("egress", e)
            return None, _NO_PACKETS

    def _run_egress(self, item: Queued, enq_timestamp: int, enq_qdepth: int, deq_qdepth: int,
                    deq_timedelta: int) -> tuple[bytes | None, Sequence[Queued]]:
        sm = item.sm
        sm.egress_port = item.egress_port
        sm.enq_timestamp = enq_timestamp & 0xFFFFFFFF
        sm.enq_qdepth = enq_qdepth & 0x7FFFF
        sm.deq_qdepth = deq_qdepth & 0x7FFFF
        sm.deq_timedelta = deq_timedelta & 0xFFFFFFFF
        sm.egress_global_timestamp = self._now() & 0xFFFFFFFFFFFF
        sm.egress_spec = (self._drop + 1) & 0x1FF  # BMv2: "not drop_port", in 9 bits
        sm.packet_length = item.length
        ctx = PacketContext(item.length, item.payload)
        ctx.truncate = item.truncate  # egress's truncate() can only cut further
        hdr, meta = item.hdr, item.meta
        try:
            self._egress(ctx, hdr, meta, sm)
        except AssertFailed as e:
            self._trace(f"assert failed at {e}; packet dropped")
            return None, _NO_PACKETS
        new: Sequence[Queued] = _NO_PACKETS
        if ctx.clone is not None:
            new = self._egress_clone(ctx, item)
        if sm.egress_spec == self._drop:
            self._trace(f"egress: port {item.egress_port}, dropped")
            return None, new
        self._compute(ctx, hdr, meta, sm)
        out = bytearray()
        self._deparser(ctx, out, hdr, sm)
        frame = bytes(out) + ctx.payload  # the payload copied once
        if ctx.recirculate is not None:  # the copy fed back is whole, as BMv2's
            if item.recirculations >= _MAX_RECIRCULATIONS:
                return None, new
            kept = self._preserved(meta, ctx.recirculate)
            self._trace(f"egress: port {item.egress_port}, recirculated")
            return None, [*new, *self._run_ingress(0, frame, RECIRC, kept,
                                                   item.recirculations + 1)]
        if ctx.truncate is not None and ctx.truncate < len(frame):
            frame = frame[:ctx.truncate]
        if self._log is not None:
            self._log(f"egress: port {item.egress_port}, transmit {len(frame)} bytes")
        return frame, new

    def _egress_clone(self, ctx: PacketContext, item: Queued) -> list[Queued]:
        assert ctx.clone is not None  # the caller checked
        session, flist = ctx.clone
        targets = self._clone_targets(session)
        if not targets:
            return []
        sm = self._new_sm()
        sm.instance_type = EGRESS_CLONE
        return self._replicate(item.hdr._copy(), self._preserved(item.meta, flist), sm,
                               item.payload, item.length, targets, 0)

    def publish(self) -> None:
        """Make what the control plane reads current: nothing to do here, the Python pipeline
        counts in the runtime's own objects (the C data plane's engine copies back)."""

    # ---- convenience ---------------------------------------------------------------------
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """The whole pipeline with zero-time unbounded FIFO queues (for STF and tests).
        Unlike ingress()/egress(), an internal error propagates, so tests see it."""
        frames: list[tuple[int, bytes]] = []
        queue = deque(self._run_ingress(port, bytes(data), NORMAL, None, 0))
        while queue:
            item = queue.popleft()
            frame, new = self._run_egress(item, 0, 0, 0, 0)
            if frame is not None:
                frames.append((item.egress_port, frame))
            queue.extend(new)
        return frames

    def _trace(self, msg: str) -> None:
        if self._log is not None:
            self._log(msg)
