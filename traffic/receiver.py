"""RoCEv2 receiver: per-QP goodput, loss, reordering, ECN/CNP, reorder buffer, message FCT.

Flows are keyed by (source IP, destination QPN). For every data packet the receiver
- strips in-band telemetry records (`traffic.inband`) and keeps them per QP,
- counts a trimmed packet (the trim DSCP: a switch cut it to its headers instead of dropping
  it, `p4src/include/trimming.p4`) as lost and, with go-back-N, NAKs it at once,
- verifies the ICRC (after stripping the DLB tag) and drops the packet if it is wrong,
- tracks PSNs: a jump ahead records the skipped PSNs as missing; an arrival below the highest
  PSN seen fills one of them (out of order, distance = highest - PSN) or is a duplicate,
- counts ECN-CE and answers with a CNP, at most one per `cnp_interval_s` per QP (as NICs do);
  optionally a PSN gap in an untagged flow draws one too (packet spraying without tags),
- ACKs packets that ask for it (the last of each message); an ACK answering a packet that
  carried INT records echoes them (`traffic.echo`, format `traffic.headers.IntEcho`; HPCC),
- with `go_back_n` (on by default, as an RC NIC; `traffic.gbn`): drops an untagged packet ahead
  of the expected PSN and answers it with one NAK (PSN sequence error), drops duplicates and
  re-ACKs, holds tagged packets ahead of the expected PSN for reordering and NAKs a hole only
  after `reorder_timeout_s`; ACKs are cumulative (expected PSN - 1) and coalesced. The reorder
  buffer then orders on the PSN and never gives up on a hole: the sender resends it,
- pushes the packet into the QP's reorder buffer (tag seq if tagged, else PSN); messages are
  assembled from the in-order stream, so a message completes when its last byte is deliverable,
  and its FCT is that time minus the send time stamped in its first packet. Tag sequences need
  not start at 0 or be contiguous per QP (a switch keeps its counters per flow-table slot):
  whenever no PSN is missing, everything held is released in tag order.
"""

from __future__ import annotations

import contextlib
import select
import signal
import socket
import time
from collections.abc import Callable

from mechanisms.trimming import TRIM_DSCP
from traffic import bpf, netutil, payload
from traffic.echo import add_echo, int_echo_of
from traffic.frames import (
    ECN_CE,
    ECN_NOT_ECT,
    STAMP_LEN,
    Endpoints,
    FrameTemplate,
    IcrcChecker,
    build_frame,
)
from traffic.gbn import DUPLICATE, HOLD, NAK_SEQ_ERROR, SEQ_ERROR, Responder
from traffic.headers import (
    ACK,
    CNP,
    DATA_OPCODES,
    INT_IP_PROTO,
    RETH_OPCODES,
    STARTS_MESSAGE,
    TAG_IP_PROTO,
)
from traffic.inband import IntReport, int_shim_at, strip_int
from traffic.receiver_config import ExpectedFlow, ReceiverConfig
from traffic.receiver_flow import Delivery, FlowState
from traffic.results import Bin, QPRecvResult, RecvResult
from traffic.wire import (
    BTH_ACKREQ_MASK,
    ECN_MASK,
    ETH_DST,
    ETH_SRC,
    IP_DST,
    IP_PROTO_AT,
    IP_SRC,
    IP_TOS_AT,
    PLAIN,
    RETH_LEN,
    TAG_SEQ,
    TAGGED,
    RoceLayout,
)

__all__ = ["ExpectedFlow", "Receiver", "ReceiverConfig", "run_receiver"]

_SHIM_PROTOS = (TAG_IP_PROTO, INT_IP_PROTO)  # IPv4 protocols an INT shim can follow or be


class Receiver:
    def __init__(self, config: ReceiverConfig,
                 on_progress: Callable[[RecvResult], None] | None = None,
                 progress_s: float = 0.0) -> None:
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.cfg = config
        self._verify_icrc, self._bin_s = config.verify_icrc, config.bin_s  # read per packet
        self._check_payload = config.check_payload
        self.on_progress = on_progress
        self.progress_s = progress_s
        self._stop = False
        self.ifaces = [i.strip() for i in config.iface.split(",") if i.strip()]
        # Per interface: a filtered receive socket and a send socket for its CNPs and ACKs.
        self.ports: list[tuple[socket.socket, socket.socket]] = []
        self._sinks: list[socket.socket] = []
        try:
            for iface in self.ifaces:
                rx = netutil.packet_socket(iface, netutil.ETH_P_ALL, rcvbuf=8 << 20)
                try:
                    tx = netutil.packet_socket(iface)
                except BaseException:
                    rx.close()
                    raise
                self.ports.append((rx, tx))
                bpf.attach(rx, bpf.roce_receiver_filter())
                netutil.drain(rx)
                netutil.socket_drops(rx)  # reset the kernel's counter
        except BaseException:
            self.close()
            raise
        self._tx = self.ports[0][1]  # where replies go: the port the data came in on
        # raw sockets for both shims' protocols (the second call's RoCE UDP socket is held)
        self._sinks = netutil.kernel_sinks(TAG_IP_PROTO) + netutil.kernel_sinks(INT_IP_PROTO)
        self.flows: dict[tuple[bytes, int], FlowState] = {}
        self._icrc = IcrcChecker()
        self._expect = {(socket.inet_aton(e.src_ip), e.qpn): e.bytes for e in config.expect}
        self._pending = set(self._expect)
        self.frames = 0
        self.socket_drops = 0
        self.start = 0.0
        self._last_data = 0.0
        self._echo: bytes | None = None  # INT shim + records of the packet being handled

    def stop(self) -> None:
        self._stop = True

    def close(self) -> None:
        for rx, tx in self.ports:
            rx.close()
            tx.close()
        for s in self._sinks:
            s.close()

    def run(self, ready: Callable[[], None] | None = None) -> RecvResult:
        cfg = self.cfg
        self.start = start = time.time()
        end = start + cfg.duration_s if cfg.duration_s else float("inf")
        next_progress = start + self.progress_s if self.progress_s > 0 else float("inf")
        for rx, _ in self.ports:
            rx.setblocking(False)
        rx_socks = [rx for rx, _ in self.ports]
        buf = bytearray(4096)
        view = memoryview(buf)
        self._last_data = 0.0
        if ready:
            ready()
        while not self._stop:
            busy = False
            for rx, tx in self.ports:
                self._tx = tx
                recv_into = rx.recv_into
                try:
                    for _ in range(256):
                        n = recv_into(buf)
                        self.frames += 1
                        self._on_frame(view[:n], time.time())
                    busy = True
                except BlockingIOError:
                    pass
            now = time.time()
            last_data = self._last_data
            for flow in self.flows.values():
                if flow.buffer.occupancy:
                    self._deliver(flow, flow.buffer.expire(now), now)
                    if flow.gbn is not None:
                        flow.gbn.tick(now)
                        self._send_replies(flow)
            if self._expect and not self._pending:
                break
            if now >= end:
                break
            if cfg.idle_timeout_s and last_data and now - last_data > cfg.idle_timeout_s:
                break
            if now >= next_progress and self.on_progress:
                next_progress = now + self.progress_s
                self.on_progress(self._result(time.time() - start, partial=True))
            if not busy:
                select.select(rx_socks, [], [], 0.005)
        now = time.time()
        for flow in self.flows.values():
            self._deliver(flow, flow.buffer.flush(), now)
        self.socket_drops += sum(netutil.socket_drops(rx) for rx in rx_socks)
        return self._result(now - start, partial=False)

    def _on_frame(self, frame: memoryview, now: float) -> None:
        """One received frame: (INT records stripped) -> decode -> (go-back-N admission) ->
        account -> reply -> reorder."""
        telemetry = self._echo = None
        shim = int_shim_at(frame) if frame[IP_PROTO_AT] in _SHIM_PROTOS else -1
        if shim >= 0:
            self._echo = int_echo_of(frame, shim)
            try:
                stripped, telemetry = strip_int(frame)
            except ValueError:  # records cut short: not a packet the sender built
                return
            frame = memoryview(stripped)
        decoded = self._decode(frame, now)
        if decoded is None:
            return
        flow, at, opcode, ext, tag_seq = decoded
        rc = flow.gbn
        if rc is not None and not self._admit(flow, rc, frame, at, ext, tag_seq, now):
            return
        accounted = self._account(flow, frame, at, opcode, ext, tag_seq, now)
        if accounted is None:  # a duplicate
            return
        if telemetry is not None:  # counted like `packets`: accepted, no duplicates
            _record_int(flow.res, telemetry)
        binr, gap, ce, payload = accounted
        if ce or gap or (rc is None and frame[at.ackreq] & BTH_ACKREQ_MASK):  # may need a reply
            self._answer(flow, frame, at, binr, gap, ce, tag_seq, now)
        self._reorder(flow, frame, at, binr, opcode, ext, payload, tag_seq, now)

    def _decode(self, frame: memoryview, now: float
                ) -> tuple[FlowState, RoceLayout, int, int, int] | None:
        """The flow, layout, opcode, unwrapped PSN and tag sequence (-1: untagged) of a RoCE
        data frame with a good ICRC; None for anything else (a bad ICRC is counted, a trimmed
        packet answered)."""
        if frame[IP_PROTO_AT] == TAG_IP_PROTO:
            at = TAGGED
            tag_seq = int.from_bytes(frame[TAG_SEQ], "big")
        else:
            at = PLAIN
            tag_seq = -1
        if len(frame) < at.bth_end:
            return None
        opcode = frame[at.opcode]
        if opcode not in DATA_OPCODES:
            return None
        key = (bytes(frame[IP_SRC]), int.from_bytes(frame[at.dqpn], "big"))
        flow = self.flows.get(key)
        if flow is None:
            flow = self._new_flow(key)
        psn = int.from_bytes(frame[at.psn], "big")
        # Unwrap the 24-bit PSN around the highest seen.
        ext = flow.highest + ((psn - flow.highest + 0x800000) & 0xFFFFFF) - 0x800000
        if frame[IP_TOS_AT] >> 2 == TRIM_DSCP:
            self._trimmed(flow, frame, at, ext, now)
            return None
        if len(frame) < at.min_len:
            return None
        if self._verify_icrc and not self._icrc.ok(frame):
            flow.res.icrc_errors += 1
            return None
        return flow, at, opcode, ext, tag_seq

    def _trimmed(self, flow: FlowState, frame: memoryview, at: RoceLayout, ext: int,
                 now: float) -> None:
        """A trimmed packet: its payload is gone; with go-back-N its NAK goes out now."""
        flow.res.trimmed += 1
        rc = flow.gbn
        if rc is None:
            return
        rc.on_trimmed(ext, now)
        if rc.replies:
            self._endpoints(flow, frame, at)
            self._send_replies(flow, self._echo)

    def _admit(self, flow: FlowState, rc: Responder, frame: memoryview, at: RoceLayout, ext: int,
               tag_seq: int, now: float) -> bool:
        """Go-back-N: send the responder's ACKs/NAKs; False drops the packet (sequence error,
        duplicate, or ahead of the expected PSN with a full reorder buffer)."""
        verdict = rc.on_data(ext, bool(frame[at.ackreq] & BTH_ACKREQ_MASK), tag_seq >= 0, now)
        if verdict == HOLD and flow.buffer.occupancy >= self.cfg.reorder_capacity:
            rc.ahead.discard(ext)  # no room: refused, the sender will resend it
            verdict = SEQ_ERROR
        if rc.replies:
            self._endpoints(flow, frame, at)
            self._send_replies(flow, self._echo)
        if verdict in (SEQ_ERROR, DUPLICATE):
            if verdict == DUPLICATE:
                flow.res.duplicates += 1
            flow.res.seq_errors = rc.seq_errors
            return False
        return True

    def _account(self, flow: FlowState, frame: memoryview, at: RoceLayout, opcode: int, ext: int,
                 tag_seq: int, now: float) -> tuple[Bin, int, bool, int] | None:
        """Count the packet in its QP and time bin: (bin, PSN gap before it, ECN-CE, payload
        bytes), or None for a duplicate."""
        res = flow.res
        b = int((now - self.start) / self._bin_s)
        if b == flow.bin_index:
            binr = flow.bin
        else:  # a new bin (or back to an older one)
            if b not in res.bins:
                res.bins[b] = Bin()
            binr = flow.bin = res.bins[b]
            flow.bin_index = b
        if ext == flow.highest + 1:  # the usual case: the next PSN
            flow.highest = ext
            gap = 0
        else:
            gap = flow.track_psn(binr, ext)
        if gap < 0:
            res.duplicates += 1
            return None
        payload = len(frame) - at.min_len - (RETH_LEN if opcode in RETH_OPCODES else 0)
        if self._check_payload:
            self._check(flow, frame, at, opcode, payload)
        res.packets += 1
        res.bytes += payload
        binr.rx_packets += 1
        binr.rx_bytes += payload
        if not res.first_t:
            res.first_t = now
        elif now - res.last_t > res.max_gap_s:
            res.max_gap_s = now - res.last_t
        res.last_t = self._last_data = now
        if tag_seq >= 0:
            res.tagged += 1
        ce = frame[IP_TOS_AT] & ECN_MASK == ECN_CE
        if ce:
            res.ce_marked += 1
            binr.ce_marked += 1
        return binr, gap, ce, payload

    def _check(self, flow: FlowState, frame: memoryview, at: RoceLayout, opcode: int,
               length: int) -> None:
        """Compare the payload with the pattern its QP and PSN stand for (traffic.payload)."""
        start = at.bth_end + (RETH_LEN if opcode in RETH_OPCODES else 0)
        got = frame[start : start + length]
        want = payload.expected(flow.res.qpn, int.from_bytes(frame[at.psn], "big"), length)
        skip = STAMP_LEN if opcode in STARTS_MESSAGE else 0
        if got[skip:] != want[skip:]:
            flow.res.wrong_packets += 1
            flow.res.wrong_elements += payload.wrong_elements(got, want, skip)

    def _answer(self, flow: FlowState, frame: memoryview, at: RoceLayout, binr: Bin, gap: int,
                ce: bool, tag_seq: int, now: float) -> None:
        """CNP for ECN-CE (or, where configured, a PSN gap in an untagged flow), at most one per
        `cnp_interval_s`; without go-back-N, an ACK for a packet that asks for one."""
        cfg = self.cfg
        res = flow.res
        # A PSN ahead of the next expected one also draws a CNP where the NIC does that, unless
        # the packet is tagged as reorderable.
        gap_cnp = gap and tag_seq < 0 and cfg.cnp_on_out_of_order
        if (ce or gap_cnp) and cfg.cnp and now - flow.last_cnp >= cfg.cnp_interval_s:
            flow.last_cnp = now
            self._reply(flow, frame, at, CNP, 0)
            res.cnp_sent += 1
            binr.cnp_sent += 1
            if not ce:
                res.cnp_out_of_order += 1
        if flow.gbn is None and frame[at.ackreq] & BTH_ACKREQ_MASK and cfg.ack:
            self._reply(flow, frame, at, ACK, int.from_bytes(frame[at.psn], "big"),
                        echo=self._echo)
            res.acks_sent += 1

    def _reorder(self, flow: FlowState, frame: memoryview, at: RoceLayout, binr: Bin, opcode: int,
                 ext: int, payload: int, tag_seq: int, now: float) -> None:
        """Through the reorder buffer (tag sequence if tagged and no go-back-N, else PSN), and
        deliver what it releases in order."""
        stamp = 0
        if opcode in STARTS_MESSAGE:
            stamp_at = at.bth_end + (RETH_LEN if opcode in RETH_OPCODES else 0)
            stamp = int.from_bytes(frame[stamp_at : stamp_at + STAMP_LEN], "big")
        item = (ext, opcode, payload, stamp)
        seq = tag_seq if tag_seq >= 0 and flow.gbn is None else ext
        buffer = flow.buffer
        released = buffer.push(seq, item, now)
        occ = buffer.occupancy
        if occ and not flow.missing:
            # No PSN is missing, so the held packets are all there is: a hole in the tag
            # sequence is not a lost packet (a switch's counter started elsewhere or is shared
            # with another flow). Release in tag order rather than wait for the timeout.
            released += buffer.release_all()
            occ = 0
        if released and flow.assemble(released, now):
            self._pending.discard(flow.key)
        if occ > binr.reorder_occupancy_max:
            binr.reorder_occupancy_max = occ

    def _new_flow(self, key: tuple[bytes, int]) -> FlowState:
        res = QPRecvResult(src_ip=socket.inet_ntoa(key[0]), qpn=key[1])
        flow = self.flows[key] = FlowState(key, res, self.cfg, self._expect.get(key))
        return flow

    def _send_replies(self, flow: FlowState, echo: bytes | None = None) -> None:
        """Send the go-back-N responder's ACKs and NAKs (addressed like the flow's replies);
        ACKs echo `echo`, the INT of the packet they answer."""
        rc = flow.gbn
        if flow.ep is None or rc is None:
            return
        for kind, psn in rc.replies:
            if kind == "nak":
                self._reply(flow, None, None, ACK, psn, NAK_SEQ_ERROR)
                flow.res.naks_sent += 1
            elif psn >= 0 and self.cfg.ack:
                self._reply(flow, None, None, ACK, psn, echo=echo)
                flow.res.acks_sent += 1
        rc.replies.clear()

    def _endpoints(self, flow: FlowState, frame: memoryview, at: RoceLayout) -> Endpoints:
        """Addressing of the flow's replies: the data frame's, reversed."""
        if flow.ep is None:
            flow.ep = Endpoints(
                src_mac=_mac(frame[ETH_DST]), dst_mac=_mac(frame[ETH_SRC]),
                src_ip=socket.inet_ntoa(frame[IP_DST]), dst_ip=flow.res.src_ip,
                sport=int.from_bytes(frame[at.sport], "big"), dqpn=flow.res.qpn,
                dscp=self.cfg.cnp_dscp, ecn=ECN_NOT_ECT,
            )
        return flow.ep

    def _reply(self, flow: FlowState, frame: memoryview | None, at: RoceLayout | None, opcode: int,
               psn: int, syndrome: int = 0, echo: bytes | None = None) -> None:
        template = flow.replies.get((opcode, syndrome))
        if template is None:
            ep = flow.ep if frame is None or at is None else self._endpoints(flow, frame, at)
            assert ep is not None, "a reply needs the flow's addressing"
            template = FrameTemplate(build_frame(ep, opcode, becn=opcode == CNP,
                                                 syndrome=syndrome), stamped=False)
            flow.replies[(opcode, syndrome)] = template
        reply: bytes | bytearray = template.render(psn)
        if echo:
            reply = add_echo(reply, echo)
        with contextlib.suppress(OSError):  # a full queue drops a reply, as a NIC would
            self._tx.send(reply)

    def _deliver(self, flow: FlowState, items: list[Delivery], now: float) -> None:
        """Assemble messages from packets the reorder buffer released in order."""
        if flow.assemble(items, now):
            self._pending.discard(flow.key)

    def _result(self, elapsed: float, partial: bool) -> RecvResult:
        for flow in self.flows.values():
            flow.res.lost = len(flow.missing) + flow.untracked
            flow.res.reorder_skipped = flow.buffer.skipped
            flow.res.reorder_occupancy_max = flow.buffer.max_occupancy
        qps = [f.res for f in self.flows.values()]
        return RecvResult(iface=self.cfg.iface, start=self.start, elapsed_s=elapsed,
                          bin_s=self.cfg.bin_s, qps=qps, frames=self.frames, partial=partial,
                          socket_drops=self.socket_drops)

    def delivered(self, src_ip: str, qpn: int) -> list[int]:
        """Released sequence (unwrapped PSNs) of one QP; needs `record_delivery`."""
        flow = self.flows[(socket.inet_aton(src_ip), qpn)]
        if flow.delivered_seqs is None:
            raise ValueError("delivery order is kept only with record_delivery=True")
        return flow.delivered_seqs


def _record_int(res: QPRecvResult, report: IntReport) -> None:
    res.int_packets += 1
    res.int_hops = [hop.to_dict() for hop in report.hops]
    deepest = res.int_qdepth_max
    hist = res.int_qdepth_hist
    for i, hop in enumerate(report.hops):
        counts = hist.setdefault(f"{hop.switch_id}:{hop.egress_port}", {})
        depth = str(hop.qdepth)
        counts[depth] = counts.get(depth, 0) + 1
        if i == len(deepest):
            deepest.append(hop.qdepth)
        elif hop.qdepth > deepest[i]:
            deepest[i] = hop.qdepth


def _mac(b: memoryview) -> str:
    return ":".join(f"{x:02x}" for x in b)


def run_receiver(config: ReceiverConfig, ready: Callable[[], None] | None = None,
                 on_progress: Callable[[RecvResult], None] | None = None,
                 progress_s: float = 0.0) -> tuple[RecvResult, Receiver]:
    """Build, run and close a receiver; SIGTERM/SIGINT end the run early with a result."""
    rx = Receiver(config, on_progress, progress_s)
    previous = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                previous[sig] = signal.signal(sig, lambda *_: rx.stop())
            except ValueError:
                break
        return rx.run(ready), rx
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        rx.close()
