"""RoCEv2 receiver: per-QP goodput, loss, reordering, ECN/CNP, reorder buffer, message FCT.

Flows are keyed by (source IP, destination QPN). For every data packet the receiver
- verifies the ICRC (after stripping the DLB tag) and drops the packet if it is wrong,
- tracks PSNs: a jump ahead records the skipped PSNs as missing; an arrival below the highest
  PSN seen fills one of them (out of order, distance = highest - PSN) or is a duplicate,
- counts ECN-CE and answers with a CNP, at most one per `cnp_interval_s` per QP (as NICs do);
  optionally a PSN gap in an untagged flow draws one too (packet spraying without tags),
- ACKs packets that ask for it (the last of each message),
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

from traffic import bpf, netutil
from traffic.frames import ECN_CE, ECN_NOT_ECT, Endpoints, FrameTemplate, IcrcChecker, build_frame
from traffic.gbn import DUPLICATE, HOLD, NAK_SEQ_ERROR, SEQ_ERROR, Responder
from traffic.headers import (
    ACK,
    CNP,
    DATA_OPCODES,
    FIRST_OPCODES,
    LAST_OPCODES,
    ONLY_OPCODES,
    RETH_OPCODES,
    TAG_IP_PROTO,
)
from traffic.receiver_config import ExpectedFlow, ReceiverConfig
from traffic.reorder import ReorderBuffer
from traffic.results import Bin, MessageResult, QPRecvResult, RecvResult

MISSING_TRACK_LIMIT = 1 << 16  # PSNs tracked per jump; beyond, counted as lost directly


__all__ = ["ExpectedFlow", "Receiver", "ReceiverConfig", "run_receiver"]


class _Flow:
    __slots__ = ("buffer", "delivered_bytes", "delivered_seqs", "ep", "gbn", "highest", "key",
                 "last_cnp", "last_released_psn", "missing", "msg", "msg_stamp", "replies", "res",
                 "untracked", "want")

    def __init__(self, key: tuple[bytes, int], res: QPRecvResult, cfg: ReceiverConfig,
                 want: int | None) -> None:
        self.key = key  # (source IPv4 as bytes, QPN)
        self.want = want  # payload bytes expected, if any
        self.res = res
        self.highest = -1  # highest PSN seen (unwrapped); senders start at PSN 0
        self.missing: set[int] = set()
        self.untracked = 0
        # With go-back-N a hole is resent, never given up on: the buffer waits (the responder
        # NAKs it after the reorder timeout) and a full buffer refuses packets instead.
        self.gbn = Responder(cfg.reorder_timeout_s) if cfg.go_back_n else None
        timeout = 1e9 if cfg.go_back_n else cfg.reorder_timeout_s
        self.buffer = ReorderBuffer(0, cfg.reorder_capacity, timeout)
        self.last_cnp = -float("inf")
        self.replies: dict[tuple[int, int], FrameTemplate] = {}  # (opcode, syndrome) ->
        self.ep: Endpoints | None = None  # addressing of replies, from the first data frame
        self.msg: MessageResult | None = None  # message being assembled from the in-order stream
        self.msg_stamp = 0  # its send time (ns since the epoch)
        self.delivered_bytes = 0
        self.last_released_psn = -1
        self.delivered_seqs: list[int] | None = [] if cfg.record_delivery else None


class Receiver:
    def __init__(self, config: ReceiverConfig,
                 on_progress: Callable[[RecvResult], None] | None = None,
                 progress_s: float = 0.0) -> None:
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.cfg = config
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
        self._sinks = netutil.kernel_sinks(TAG_IP_PROTO)
        self.flows: dict[tuple[bytes, int], _Flow] = {}
        self._icrc = IcrcChecker()
        self._expect = {(socket.inet_aton(e.src_ip), e.qpn): e.bytes for e in config.expect}
        self._pending = set(self._expect)
        self.frames = 0
        self.socket_drops = 0
        self.start = 0.0
        self._last_data = 0.0

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
        if frame[23] == TAG_IP_PROTO:
            l4 = 42
            tag_seq = int.from_bytes(frame[38:42], "big")
        else:
            l4 = 34
            tag_seq = -1
        bth = l4 + 8
        if len(frame) < bth + 16:
            return
        opcode = frame[bth]
        if opcode not in DATA_OPCODES:
            return
        key = (bytes(frame[26:30]), int.from_bytes(frame[bth + 5 : bth + 8], "big"))
        flow = self.flows.get(key)
        if flow is None:
            flow = self._new_flow(key)
        res = flow.res
        if self.cfg.verify_icrc and not self._icrc.ok(frame):
            res.icrc_errors += 1
            return
        psn = int.from_bytes(frame[bth + 9 : bth + 12], "big")
        # Unwrap the 24-bit PSN around the highest seen.
        ext = flow.highest + ((psn - flow.highest + 0x800000) & 0xFFFFFF) - 0x800000
        rc = flow.gbn
        if rc is not None:
            verdict = rc.on_data(ext, bool(frame[bth + 8] & 0x80), tag_seq >= 0, now)
            if verdict == HOLD and flow.buffer.occupancy >= self.cfg.reorder_capacity:
                rc.ahead.discard(ext)  # no room: refused, the sender will resend it
                verdict = SEQ_ERROR
            if rc.replies:
                self._endpoints(flow, frame, l4)
                self._send_replies(flow)
            if verdict in (SEQ_ERROR, DUPLICATE):
                if verdict == DUPLICATE:
                    res.duplicates += 1
                res.seq_errors = rc.seq_errors
                return
        b = int((now - self.start) / self.cfg.bin_s)
        binr = res.bins.get(b)
        if binr is None:
            binr = res.bins[b] = Bin()
        gap = 0
        if ext > flow.highest:
            gap = ext - flow.highest - 1
            if gap:
                if gap > MISSING_TRACK_LIMIT:
                    flow.untracked += gap - MISSING_TRACK_LIMIT
                    flow.missing.update(range(ext - MISSING_TRACK_LIMIT, ext))
                else:
                    flow.missing.update(range(flow.highest + 1, ext))
            flow.highest = ext
        elif ext in flow.missing:
            flow.missing.discard(ext)
            dist = flow.highest - ext
            res.out_of_order += 1
            binr.out_of_order += 1
            res.reorder_distance_sum += dist
            if dist > res.reorder_distance_max:
                res.reorder_distance_max = dist
        else:
            res.duplicates += 1
            return
        payload = len(frame) - bth - 16 - (16 if opcode in RETH_OPCODES else 0)
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
        ce = frame[15] & 3 == ECN_CE
        if ce:
            res.ce_marked += 1
            binr.ce_marked += 1
        # A PSN ahead of the next expected one also draws a CNP where the NIC does that, unless
        # the packet is tagged as reorderable.
        gap_cnp = gap and tag_seq < 0 and self.cfg.cnp_on_out_of_order
        if (ce or gap_cnp) and self.cfg.cnp and now - flow.last_cnp >= self.cfg.cnp_interval_s:
            flow.last_cnp = now
            self._reply(flow, frame, l4, CNP, 0)
            res.cnp_sent += 1
            binr.cnp_sent += 1
            if not ce:
                res.cnp_out_of_order += 1
        if rc is None and frame[bth + 8] & 0x80 and self.cfg.ack:
            self._reply(flow, frame, l4, ACK, psn)
            res.acks_sent += 1
        stamp = 0
        if opcode in FIRST_OPCODES or opcode in ONLY_OPCODES:
            at = bth + 12 + (16 if opcode in RETH_OPCODES else 0)
            stamp = int.from_bytes(frame[at : at + 8], "big")
        item = (ext, opcode, payload, stamp)
        seq = tag_seq if tag_seq >= 0 and rc is None else ext
        released = flow.buffer.push(seq, item, now)
        if flow.buffer.occupancy and not flow.missing:
            # No PSN is missing, so the held packets are all there is: a hole in the tag
            # sequence is not a lost packet (a switch's counter started elsewhere or is shared
            # with another flow). Release in tag order rather than wait for the timeout.
            released += flow.buffer.release_all()
        if released:
            self._deliver(flow, released, now)
        occ = flow.buffer.occupancy
        if occ > binr.reorder_occupancy_max:
            binr.reorder_occupancy_max = occ

    def _new_flow(self, key: tuple[bytes, int]) -> _Flow:
        res = QPRecvResult(src_ip=socket.inet_ntoa(key[0]), qpn=key[1])
        flow = self.flows[key] = _Flow(key, res, self.cfg, self._expect.get(key))
        return flow

    def _send_replies(self, flow: _Flow) -> None:
        """Send the go-back-N responder's ACKs and NAKs (addressed like the flow's replies)."""
        if flow.ep is None:
            return
        for kind, psn in flow.gbn.replies:
            if kind == "nak":
                self._reply(flow, None, 0, ACK, psn, NAK_SEQ_ERROR)
                flow.res.naks_sent += 1
            elif psn >= 0 and self.cfg.ack:
                self._reply(flow, None, 0, ACK, psn)
                flow.res.acks_sent += 1
        flow.gbn.replies.clear()

    def _endpoints(self, flow: _Flow, frame: memoryview, l4: int) -> Endpoints:
        if flow.ep is None:
            flow.ep = Endpoints(
                src_mac=_mac(frame[0:6]), dst_mac=_mac(frame[6:12]),
                src_ip=socket.inet_ntoa(frame[30:34]), dst_ip=flow.res.src_ip,
                sport=int.from_bytes(frame[l4 : l4 + 2], "big"), dqpn=flow.res.qpn,
                dscp=self.cfg.cnp_dscp, ecn=ECN_NOT_ECT,
            )
        return flow.ep

    def _reply(self, flow: _Flow, frame: memoryview | None, l4: int, opcode: int, psn: int,
               syndrome: int = 0) -> None:
        template = flow.replies.get((opcode, syndrome))
        if template is None:
            ep = flow.ep if frame is None else self._endpoints(flow, frame, l4)
            template = FrameTemplate(build_frame(ep, opcode, becn=opcode == CNP,
                                                 syndrome=syndrome), stamped=False)
            flow.replies[(opcode, syndrome)] = template
        with contextlib.suppress(OSError):  # a full queue drops a reply, as a NIC would
            self._tx.send(template.render(psn))

    def _deliver(self, flow: _Flow, items: list, now: float) -> None:
        """Assemble messages from packets the reorder buffer released in order."""
        res = flow.res
        for ext, opcode, payload, stamp in items:
            if flow.delivered_seqs is not None:
                flow.delivered_seqs.append(ext)
            contiguous = ext == flow.last_released_psn + 1
            flow.last_released_psn = ext
            flow.delivered_bytes += payload
            res.delivered += 1
            msg = flow.msg
            if opcode in FIRST_OPCODES or opcode in ONLY_OPCODES:
                msg = flow.msg = MessageResult(psn=ext & 0xFFFFFF, bytes=0, fct_s=None,
                                               complete=True)
                flow.msg_stamp = stamp
            elif msg is None:  # the message's first packet was lost
                msg = flow.msg = MessageResult(psn=ext & 0xFFFFFF, bytes=0, fct_s=None,
                                               complete=False)
            elif not contiguous:
                msg.complete = False
            msg.bytes += payload
            if opcode in LAST_OPCODES or opcode in ONLY_OPCODES:
                if msg.complete and flow.msg_stamp:
                    msg.fct_s = round(now - flow.msg_stamp / 1e9, 9)
                res.messages.append(msg)
                flow.msg = None
        if flow.want is not None and flow.delivered_bytes >= flow.want:
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
