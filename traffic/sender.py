"""RoCEv2 sender: one process, one interface, one or more paced queue pairs.

Each queue pair (QP) sends messages as RDMA WRITE (FIRST/MIDDLE/LAST, RETH on FIRST/ONLY) or
SEND packets with consecutive PSNs, its own UDP source port (the ECMP entropy) and its own rate
limiter, which DCQCN cuts on CNPs and recovers on its timers. PFC pause frames received on the
interface stop the data priority for the time they ask. Frames come from prebuilt templates
(`traffic.frames.FrameTemplate`) and go out on an AF_PACKET socket.

QPNs are paired symmetrically: the receiver answers (CNP, ACK) with the QPN the data carried.
The first payload bytes of a message carry its send time (ns since the epoch) so the receiver
can compute flow completion times; all hosts of the lab share one clock.
"""

from __future__ import annotations

import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from traffic import bpf, netutil
from traffic.dcqcn import Dcqcn, DcqcnParams
from traffic.frames import (
    ECN_ECT0,
    ECN_NOT_ECT,
    ETH_LEN,
    STAMP_LEN,
    Endpoints,
    FrameTemplate,
    build_frame,
)
from traffic.headers import (
    ACK,
    CNP,
    SEND_FIRST,
    SEND_LAST,
    SEND_MIDDLE,
    SEND_ONLY,
    TAG_IP_PROTO,
    WRITE_FIRST,
    WRITE_LAST,
    WRITE_MIDDLE,
    WRITE_ONLY,
)
from traffic.pfc import PauseState
from traffic.results import QPSendResult, SendResult

VERBS = {
    "write": (WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY),
    "send": (SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY),
}


@dataclass
class QueuePairConfig:
    dst_ip: str
    qpn: int
    rate_bps: float = 10e6  # start rate; 0 = unpaced (as fast as the loop goes)
    message_bytes: int = 65536
    messages: int | None = 1  # None: keep sending until the sender's duration ends
    sport: int | None = None  # default 49152 + qpn mod 16384
    dst_mac: str | None = None  # default: from the neighbour table
    verb: str = "write"
    tag: bool = False  # add the DLB reorder tag (flow id = qpn mod 65536, seq from 0)

    def problems(self) -> list[str]:
        out = []
        name = f"QP {self.qpn}"
        if not 0 < self.qpn < 1 << 24:
            out.append(f"{name}: QPN must be 1..16777215")
        if self.rate_bps < 0:
            out.append(f"{name}: rate must be > 0 b/s (0 = unpaced), got {self.rate_bps}")
        if self.message_bytes < STAMP_LEN:
            out.append(f"{name}: message size must be >= {STAMP_LEN} bytes (the first packet "
                       f"carries the send time), got {self.message_bytes}")
        if self.messages is not None and self.messages <= 0:
            out.append(f"{name}: message count must be > 0, got {self.messages}")
        if self.sport is not None and not 0 < self.sport < 65536:
            out.append(f"{name}: UDP source port must be 1..65535, got {self.sport}")
        if self.verb not in VERBS:
            out.append(f"{name}: verb must be one of {sorted(VERBS)}, got {self.verb!r}")
        try:
            netutil.validate_ipv4(self.dst_ip, "destination")
        except netutil.NetError as e:
            out.append(f"{name}: {e}")
        return out


@dataclass
class SenderConfig:
    iface: str
    qps: list[QueuePairConfig]
    mtu_payload: int = 1024  # RDMA payload bytes per packet (the path MTU)
    dscp: int = 26
    ecn_capable: bool = True  # ECT(0) on data
    priority: int = 3  # PFC priority of the data
    link_bps: float = 100e6  # for PFC pause timing
    dcqcn: bool = True
    dcqcn_params: DcqcnParams | None = None  # default: DcqcnParams.scaled(QP start rate)
    duration_s: float | None = None
    src_ip: str | None = None  # default: the interface's address
    src_mac: str | None = None
    progress_s: float = 0.0  # > 0: call on_progress every so often
    ack_wait_s: float = 0.2  # at the end, wait this long at most for outstanding ACKs
    start_at: float | None = None  # epoch seconds: hold the first packet until then
    # A QP that fell behind its schedule (the process was descheduled, the loop was slow) may
    # catch up this much time at once; pauses and rate cuts never build up credit.
    max_burst_s: float = 0.005

    def problems(self) -> list[str]:
        out = [p for qp in self.qps for p in qp.problems()]
        if not self.qps:
            out.append("no queue pairs to send")
        keys = [(qp.dst_ip, qp.qpn) for qp in self.qps]
        if len(set(keys)) != len(keys):
            out.append("two queue pairs share a (destination, QPN)")
        if self.mtu_payload < STAMP_LEN:
            out.append(f"payload per packet must be >= {STAMP_LEN} bytes")
        if not 0 <= self.dscp < 64:
            out.append(f"DSCP must be 0..63, got {self.dscp}")
        if not 0 <= self.priority < 8:
            out.append(f"priority must be 0..7, got {self.priority}")
        if self.link_bps <= 0:
            out.append(f"link rate must be > 0 b/s, got {self.link_bps}")
        if self.duration_s is not None and self.duration_s <= 0:
            out.append(f"duration must be > 0 s, got {self.duration_s}")
        if self.duration_s is None and any(qp.messages is None for qp in self.qps):
            out.append("a QP without a message count needs a duration")
        return out


class _QP:
    """Run-time state of one queue pair."""

    def __init__(self, cfg: QueuePairConfig, ep: Endpoints, mtu: int, dcqcn: Dcqcn | None):
        self.cfg = cfg
        self.mtu = mtu
        self.dcqcn = dcqcn
        self.rate = cfg.rate_bps
        self.plan = _message_plan(cfg, ep, mtu)
        self.psn = 0
        self.index = 0  # position in the current message's plan
        self.left = cfg.messages  # None = unlimited
        self.next_t = 0.0
        self.res = QPSendResult(dst_ip=cfg.dst_ip, qpn=cfg.qpn, sport=ep.sport)


def _message_plan(cfg: QueuePairConfig, ep: Endpoints, mtu: int) -> list[FrameTemplate]:
    """The frames of one message, as templates (MIDDLE shared by all middle packets)."""
    first_op, middle_op, last_op, only_op = VERBS[cfg.verb]
    size = cfg.message_bytes
    n = max(1, -(-size // mtu))
    tag = (cfg.qpn & 0xFFFF, 0) if cfg.tag else None
    first_len = min(size, mtu)

    def template(op: int, length: int, stamped: bool) -> FrameTemplate:
        frame = build_frame(ep, op, 0, bytes(length), dlen=size, rkey=cfg.qpn, tag=tag)
        return FrameTemplate(frame, stamped=stamped)

    if n == 1:
        return [template(only_op, first_len, True)]
    last_len = size - (n - 1) * mtu
    middle = [template(middle_op, mtu, False)] * (n - 2)
    return [template(first_op, first_len, True), *middle, template(last_op, last_len, False)]


class Sender:
    """Runs one `SenderConfig`; `run()` blocks until every QP finished or the duration ends."""

    def __init__(self, config: SenderConfig,
                 on_progress: Callable[[SendResult], None] | None = None) -> None:
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.cfg = config
        self.on_progress = on_progress
        self._stop = False
        netutil.require_interface(config.iface)
        self.src_mac = config.src_mac or netutil.interface_mac(config.iface)
        self.src_ip = config.src_ip or netutil.host_ip(config.iface)
        self.pause = PauseState(config.link_bps)
        ecn = ECN_ECT0 if config.ecn_capable else ECN_NOT_ECT
        self.qps: list[_QP] = []
        for qc in config.qps:
            mac = qc.dst_mac or netutil.resolve_mac(qc.dst_ip, config.iface)
            sport = qc.sport or 49152 + qc.qpn % 16384
            ep = Endpoints(self.src_mac, mac, self.src_ip, qc.dst_ip, sport, qc.qpn,
                           config.dscp, ecn)
            dc = None
            if config.dcqcn and qc.rate_bps > 0:
                params = config.dcqcn_params or DcqcnParams.scaled(qc.rate_bps)
                dc = Dcqcn(params, qc.rate_bps)
            self.qps.append(_QP(qc, ep, config.mtu_payload, dc))
        mtu = netutil.interface_mtu(config.iface)
        biggest = max(len(t.buf) for q in self.qps for t in q.plan) - ETH_LEN
        if biggest > mtu:
            raise ValueError(f"packets of {biggest} B (IPv4) exceed the MTU {mtu} of "
                             f"{config.iface}: lower the payload per packet "
                             f"({config.mtu_payload} B)")
        self._by_key = {(q.cfg.dst_ip, q.cfg.qpn): q for q in self.qps}
        self.tx = netutil.packet_socket(config.iface)
        self.ctl = netutil.packet_socket(config.iface, netutil.ETH_P_ALL)
        bpf.attach(self.ctl, bpf.sender_control_filter())
        netutil.drain(self.ctl)

    def stop(self) -> None:
        """Ask a running `run()` to finish after the current packet (signal-handler safe)."""
        self._stop = True

    def close(self) -> None:
        self.tx.close()
        self.ctl.close()

    def run(self) -> SendResult:
        cfg = self.cfg
        netutil.tight_timers()
        if cfg.start_at is not None:  # a coordinated start (collective steps)
            while not self._stop and time.time() < cfg.start_at:
                self._poll_control(min(0.05, cfg.start_at - time.time()), time.perf_counter())
        t0 = time.perf_counter()
        wall0 = time.time()
        wall_off = wall0 - t0  # perf_counter -> epoch seconds
        end = t0 + cfg.duration_s if cfg.duration_s else float("inf")
        next_progress = t0 + cfg.progress_s if cfg.progress_s > 0 else float("inf")
        active = list(self.qps)
        for qp in active:
            qp.next_t = t0
            qp.res.start = wall0
            if qp.dcqcn:
                qp.res.rate_samples.append((0.0, qp.rate))
        send = self.tx.send
        prio = cfg.priority
        max_burst = cfg.max_burst_s
        was_paused = False
        count = 0
        while active and not self._stop:
            now = time.perf_counter()
            qp = min(active, key=_next_t) if len(active) > 1 else active[0]
            due = qp.next_t
            if self.pause.is_paused(prio, now):
                due = max(due, self.pause.resume_at(prio))
                was_paused = True
            if due > now:
                if now >= end:
                    break
                self._poll_control(min(due, end) - now, t0)
                continue
            if was_paused:  # time spent paused is not credit to catch up on
                was_paused = False
                for q in active:
                    q.next_t = max(q.next_t, now)
            plan = qp.plan
            i = qp.index
            last = i == len(plan) - 1
            stamp = int((now + wall_off) * 1e9) if i == 0 else 0
            buf = plan[i].render(qp.psn, last, qp.psn, stamp)
            send(buf)
            n = len(buf)
            qp.psn = (qp.psn + 1) & 0xFFFFFF
            res = qp.res
            res.packets += 1
            res.frame_bytes += n
            if qp.rate > 0:
                qp.next_t = max(qp.next_t + n * 8 / qp.rate, now - max_burst)
            if last:
                qp.index = 0
                res.messages += 1
                res.payload_bytes += qp.cfg.message_bytes
                if qp.left is not None:
                    qp.left -= 1
                    if qp.left == 0:
                        res.end = now + wall_off
                        active.remove(qp)
            else:
                qp.index = i + 1
            count += 1
            if count & 31 == 0:
                self._poll_control(0.0, t0)
                if now >= end:
                    break
                if now >= next_progress and self.on_progress:
                    next_progress = now + cfg.progress_s
                    self.on_progress(self._result(wall0, now - t0, partial=True))
        now = time.perf_counter()
        for qp in self.qps:
            if qp.index:  # stopped mid-message: count the payload already sent
                qp.res.payload_bytes += qp.index * qp.mtu  # only the LAST is shorter
            if qp.res.end == 0.0:
                qp.res.end = now + wall_off
        self._await_acks(now + self.cfg.ack_wait_s, t0)
        return self._result(wall0, time.perf_counter() - t0, partial=False)

    def _await_acks(self, deadline: float, t0: float) -> None:
        """Give the ACKs of the last messages time to arrive (each message asks for one)."""
        while not self._stop:
            now = time.perf_counter()
            if now >= deadline or all(q.res.acks >= q.res.messages for q in self.qps):
                return
            self._poll_control(deadline - now, t0)

    def _poll_control(self, timeout: float, t0: float) -> None:
        """Handle CNPs, ACKs and pause frames; waits up to `timeout` for the first one."""
        ctl = self.ctl
        if timeout > 0:
            ready, _, _ = select.select([ctl], [], [], timeout)
            if not ready:
                self._update_rates(time.perf_counter() - t0)
                return
        while True:
            try:
                frame = ctl.recv(2048)
            except BlockingIOError:
                break
            now = time.perf_counter()
            if not self.pause.on_frame(frame, now):
                self._on_roce(frame, now - t0)
        self._update_rates(time.perf_counter() - t0)

    def _on_roce(self, frame: bytes, t: float) -> None:
        bth = 50 if frame[23] == TAG_IP_PROTO else 42  # a switch may have tagged it
        if len(frame) < bth + 12:
            return
        src_ip = ".".join(str(b) for b in frame[26:30])
        opcode = frame[bth]
        qp = self._by_key.get((src_ip, int.from_bytes(frame[bth + 5 : bth + 8], "big")))
        if qp is None:
            return
        if opcode == CNP:
            qp.res.cnps += 1
            if qp.dcqcn and qp.dcqcn.on_cnp(t):
                qp.rate = qp.dcqcn.current
                qp.res.rate_cuts += 1
                qp.res.rate_samples.append((round(t, 6), qp.rate))
        elif opcode == ACK:
            qp.res.acks += 1

    def _update_rates(self, t: float) -> None:
        for qp in self.qps:
            dc = qp.dcqcn
            if dc is None:
                continue
            rate = dc.update(t)
            if rate != qp.rate:
                qp.rate = rate
                qp.res.rate_samples.append((round(t, 6), rate))

    def _result(self, wall0: float, elapsed: float, partial: bool) -> SendResult:
        for qp in self.qps:
            qp.res.final_rate_bps = qp.rate
        return SendResult(
            iface=self.cfg.iface, src_ip=self.src_ip, start=wall0, elapsed_s=elapsed,
            qps=[qp.res for qp in self.qps], pause_frames=self.pause.frames,
            paused_s=self.pause.paused_s[self.cfg.priority], partial=partial,
        )


def _next_t(qp: _QP) -> float:
    return qp.next_t


def run_sender(config: SenderConfig,
               on_progress: Callable[[SendResult], None] | None = None) -> SendResult:
    """Build, run and close a sender; SIGTERM/SIGINT end the run early with a result."""
    sender = Sender(config, on_progress)
    previous = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                previous[sig] = signal.signal(sig, lambda *_: sender.stop())
            except ValueError:  # not the main thread: no signal handling
                break
        return sender.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sender.close()
