"""RoCEv2 sender: one process, one interface, one or more paced queue pairs.

Each queue pair (QP) sends messages as RDMA WRITE (FIRST/MIDDLE/LAST, RETH on FIRST/ONLY) or
SEND packets with consecutive PSNs, its own UDP source port (the ECMP entropy) and its own rate
limiter. Congestion control (`SenderConfig.cc`): DCQCN cuts the rate on CNPs and recovers on its
timers (`traffic.dcqcn`); HPCC asks the switches for INT on every data packet and an ACK per
packet, reads the records each ACK echoes (`traffic.echo`), keeps at most its window W in flight
and paces at R = W/T (`traffic.hpcc`); "none" ignores CNPs. PFC pause frames received on the
interface stop the data priority for the time they ask. Frames come from prebuilt templates
(`traffic.frames.FrameTemplate`) and go out on an AF_PACKET socket.

QPNs are paired symmetrically: the receiver answers (CNP, ACK, NAK) with the QPN the data
carried. The first payload bytes of a message carry its send time (ns since the epoch) so the
receiver can compute flow completion times; all hosts of the lab share one clock.

Reliability (`go_back_n`, on by default as on a RoCEv2 RC NIC; `traffic.gbn`): the sender asks
for an ACK on the last packet of every message and every `ack_every` packets, goes back to the
PSN a NAK names, and to the oldest unacknowledged PSN when the retransmission timer expires; a
QP is finished when its last PSN is acknowledged. Retransmitted packets and bytes, NAKs and
timeouts are counted per QP. With `selective` it resends only the PSNs NAKed (and the oldest
unacknowledged one on a timeout; `traffic.selective`), as Ultra Ethernet's transport does. Off,
the sender sends every PSN once and only waits `ack_wait_s` for the ACKs of its messages (a lost
packet leaves its message incomplete, as with UC).
"""

from __future__ import annotations

import errno
import select
import signal
import time
from collections.abc import Callable
from dataclasses import replace

from traffic import bpf, netutil, payload
from traffic.dcqcn import Dcqcn, DcqcnParams
from traffic.echo import read_echo
from traffic.entropy import EntropyChooser, entropy_port
from traffic.frames import ECN_ECT0, ECN_NOT_ECT, Endpoints, FrameTemplate, build_frame
from traffic.gbn import PSN_MASK, Requester, is_nak, unwrap
from traffic.headers import ACK, CNP, INT_MAX_HOPS
from traffic.hpcc import Hpcc, HpccParams
from traffic.pfc import PauseState
from traffic.results import QPSendResult, SendResult
from traffic.selective import SelectiveRequester
from traffic.sender_config import VERBS, QueuePairConfig, SenderConfig
from traffic.wire import ETH_LEN, INT_HOP_LEN, IP_SRC, RoceLayout, roce_layout

__all__ = ["QueuePairConfig", "Sender", "SenderConfig", "run_sender"]

TX_BUSY_WAIT_S = 0.0005  # after the interface's queue refused a frame (about one at 10 Mb/s)


class _QP:
    """Run-time state of one queue pair."""

    def __init__(self, cfg: QueuePairConfig, ep: Endpoints, mtu: int, dcqcn: Dcqcn | None,
                 sender: SenderConfig):
        self.cfg = cfg
        self.mtu = mtu
        self.dcqcn = dcqcn
        self.hpcc: Hpcc | None = None
        self.rate = cfg.rate_bps
        hpcc = sender.congestion_control == "hpcc"
        int_hops = cfg.int_hops or (INT_MAX_HOPS if hpcc else 0)  # HPCC needs the records
        self.plan = _message_plan(cfg, ep, mtu, int_hops)
        # one plan per entropy (its own UDP source port, so its own cached header CRC)
        self.plans = [self.plan, *(_message_plan(cfg, replace(ep, sport=entropy_port(ep.sport, k)),
                                                 mtu, int_hops) for k in range(1, cfg.entropies))]
        self.entropy = EntropyChooser(cfg.entropies, cfg.spray)
        self.int_hops = int_hops
        self.lengths = [t.payload_len for t in self.plan]
        total = None if cfg.messages is None else cfg.messages * len(self.plan)
        requester = SelectiveRequester if sender.selective else Requester
        self.gbn: Requester | SelectiveRequester = requester(total, sender.rto_s,
                                                             sender.max_retries)
        self.reliable = sender.go_back_n
        self.ack_every = sender.ack_interval
        if hpcc:
            frame = max(len(t.buf) for t in self.plan)
            params = sender.hpcc_params or HpccParams.scaled(cfg.rate_bps, sender.hpcc_rtt_s,
                                                             packet_bytes=frame)
            self.hpcc = Hpcc(params)
            self.rate = min(cfg.rate_bps, self.hpcc.rate_bps)
        self.stamps: dict[int, int] = {}  # message number -> send time (ns) of its first packet
        self.next_t = 0.0
        self.res = QPSendResult(dst_ip=cfg.dst_ip, qpn=cfg.qpn, sport=ep.sport)

    def due(self) -> float:
        """When this QP next needs the loop: its next packet, or its retransmission timer."""
        gbn = self.gbn
        ready = gbn.has_to_send if self.hpcc is None else self.can_send
        send = self.next_t if ready else float("inf")
        return min(send, gbn.timer_due()) if self.reliable else send

    @property
    def can_send(self) -> bool:
        """A packet is left to send and the window (HPCC's W, if any) has room for it."""
        gbn = self.gbn
        if not gbn.has_to_send:
            return False
        hpcc = self.hpcc
        if hpcc is None or gbn.next == gbn.una:
            return True
        return (gbn.next - gbn.una) * hpcc.p.packet_bytes < hpcc.window  # frames in flight

    @property
    def finished(self) -> bool:
        gbn = self.gbn
        return gbn.done if self.reliable else not gbn.has_to_send


def _message_plan(cfg: QueuePairConfig, ep: Endpoints, mtu: int,
                  int_hops: int) -> list[FrameTemplate]:
    """The frames of one message, as templates (MIDDLE shared by all middle packets)."""
    first_op, middle_op, last_op, only_op = VERBS[cfg.verb]
    size = cfg.message_bytes
    n = max(1, -(-size // mtu))
    tag = (cfg.qpn & 0xFFFF, 0) if cfg.tag else None
    first_len = min(size, mtu)

    def template(op: int, length: int, stamped: bool) -> FrameTemplate:
        frame = build_frame(ep, op, 0, bytes(length), dlen=size, rkey=cfg.qpn, tag=tag,
                            int_hops=int_hops)
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
        self._t0 = 0.0
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
            if config.congestion_control == "dcqcn" and qc.rate_bps > 0:
                params = config.dcqcn_params or DcqcnParams.scaled(qc.rate_bps)
                dc = Dcqcn(params, qc.rate_bps)
            self.qps.append(_QP(qc, ep, config.mtu_payload, dc, config))
        mtu = netutil.interface_mtu(config.iface)
        # INT records grow a packet on its way: it must still fit the links' MTU at the end
        biggest = max(len(t.buf) + min(q.int_hops, INT_MAX_HOPS) * INT_HOP_LEN
                      for q in self.qps for t in q.plan) - ETH_LEN
        if biggest > mtu:
            raise ValueError(f"packets of {biggest} B (IPv4) exceed the MTU {mtu} of "
                             f"{config.iface}: lower the payload per packet "
                             f"({config.mtu_payload} B)")
        self._by_key = {(q.cfg.dst_ip, q.cfg.qpn): q for q in self.qps}
        self.tx = netutil.packet_socket(config.iface)
        self.tx_busy = 0
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
        t0 = self._t0 = time.perf_counter()
        wall0 = time.time()
        wall_off = wall0 - t0  # perf_counter -> epoch seconds
        end = t0 + cfg.duration_s if cfg.duration_s else float("inf")
        next_progress = t0 + cfg.progress_s if cfg.progress_s > 0 else float("inf")
        active = list(self.qps)
        for qp in active:
            qp.next_t = t0
            qp.res.start = wall0
            if qp.dcqcn or qp.hpcc:
                qp.res.rate_samples.append((0.0, qp.rate))
        send = self.tx.send
        prio = cfg.priority
        max_burst = cfg.max_burst_s
        patterned, corrupt_every = cfg.pattern, cfg.corrupt_every
        data: bytes | bytearray | None = None
        was_paused = False
        count = 0
        while active and not self._stop:
            now = time.perf_counter()
            qp = min(active, key=_QP.due) if len(active) > 1 else active[0]
            gbn = qp.gbn
            due = qp.next_t
            if qp.reliable and gbn.timer_due() <= now:
                gbn.on_timeout(now)
                self._retire(qp, active, now + wall_off)
                continue
            if not qp.can_send:  # everything sent or the window full: wait for ACKs or the timer
                due = qp.due()
            elif self.pause.is_paused(prio, now):
                due = max(due, self.pause.resume_at(prio))
                was_paused = True
            if due > now:
                if now >= end:
                    break
                self._poll_control(min(due, end, now + 0.05) - now, t0)
                self._retire_finished(active, time.perf_counter() + wall_off)
                continue
            if was_paused:  # time spent paused is not credit to catch up on
                was_paused = False
                for q in active:
                    q.next_t = max(q.next_t, now)
            plan = qp.plan
            psn = gbn.next
            message, i = divmod(psn, len(plan))
            last = i == len(plan) - 1
            stamp = 0
            if i == 0:
                # read from the wall clock itself: perf_counter + wall_off is off by however long
                # the process was preempted between the two reads that made wall_off
                stamp = qp.stamps.get(message) or time.time_ns()
                if qp.reliable:
                    qp.stamps[message] = stamp
                    qp.stamps.pop(message - 2, None)
            ackreq = last or (qp.reliable and (psn + 1) % qp.ack_every == 0)
            if patterned:
                data = payload.expected(qp.cfg.qpn, psn, qp.lengths[i])
                if corrupt_every and (count + 1) % corrupt_every == 0:
                    data = bytearray(data)
                    data[-1] ^= 0xFF  # the last byte: never the send stamp
            plans = qp.plans
            template = plan[i] if len(plans) == 1 else plans[qp.entropy.choose(psn)][i]
            buf = template.render(psn & PSN_MASK, ackreq, psn, stamp, data)
            try:
                send(buf)
            except OSError as e:  # a full qdisc (tc shaping): wait, as a NIC's send queue does
                if e.errno not in (errno.ENOBUFS, errno.EAGAIN):
                    raise
                self.tx_busy += 1
                self._poll_control(TX_BUSY_WAIT_S, t0)
                continue
            n = len(buf)
            res = qp.res
            res.packets += 1
            res.frame_bytes += n
            if qp.rate > 0:
                qp.next_t = max(qp.next_t + n * 8 / qp.rate, now - max_burst)
            if gbn.on_sent(psn, n, now) and last:
                res.messages += 1
                res.payload_bytes += qp.cfg.message_bytes
            if not gbn.has_to_send and not qp.reliable:
                res.end = now + wall_off
                active.remove(qp)
            count += 1
            if count & 31 == 0:
                self._poll_control(0.0, t0)
                self._retire_finished(active, time.perf_counter() + wall_off)
                if now >= end:
                    break
                if now >= next_progress and self.on_progress:
                    next_progress = now + cfg.progress_s
                    self.on_progress(self._result(wall0, now - t0, partial=True))
        now = time.perf_counter()
        for qp in self.qps:
            gbn = qp.gbn
            index = gbn.sent_max % len(qp.plan)
            if index and not qp.res.end:  # stopped mid-message: count the payload already sent
                qp.res.payload_bytes += index * qp.mtu  # only the LAST is shorter
            if qp.res.end == 0.0:
                qp.res.end = now + wall_off
        if not cfg.go_back_n:
            self._await_acks(now + self.cfg.ack_wait_s, t0)
        return self._result(wall0, time.perf_counter() - t0, partial=False)

    def _retire(self, qp: _QP, active: list[_QP], wall: float) -> None:
        if qp.finished and qp in active:
            qp.res.end = wall
            qp.res.gave_up = qp.gbn.failed
            active.remove(qp)

    def _retire_finished(self, active: list[_QP], wall: float) -> None:
        for qp in [q for q in active if q.reliable and q.finished]:
            self._retire(qp, active, wall)

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
        at = roce_layout(frame)  # a switch may have tagged it
        if len(frame) < at.bth_end:
            return
        src_ip = ".".join(str(b) for b in frame[IP_SRC])
        opcode = frame[at.opcode]
        qp = self._by_key.get((src_ip, int.from_bytes(frame[at.dqpn], "big")))
        if qp is None:
            return
        if opcode == CNP:
            qp.res.cnps += 1
            if qp.dcqcn and qp.dcqcn.on_cnp(t):
                qp.rate = qp.dcqcn.current
                qp.res.rate_cuts += 1
                qp.res.rate_samples.append((round(t, 6), qp.rate))
        elif opcode == ACK:
            if len(frame) < at.aeth_end:
                return
            psn = int.from_bytes(frame[at.psn], "big")
            now = t + self._t0
            if is_nak(frame[at.syndrome]):
                qp.res.naks += 1
                if qp.reliable:
                    qp.entropy.nak(unwrap(psn, qp.gbn.una))
                    qp.gbn.on_nak(psn, now)
            else:
                qp.res.acks += 1
                if qp.reliable:
                    una = qp.gbn.una
                    qp.gbn.on_ack(psn, now)
                    if qp.gbn.una > una:
                        qp.entropy.acked(una, qp.gbn.una)
                if qp.hpcc is not None:
                    self._on_echo(qp, frame, at, psn, t)

    def _on_echo(self, qp: _QP, frame: bytes, at: RoceLayout, psn: int, t: float) -> None:
        """HPCC: the window and rate from the records the ACK echoes."""
        hpcc = qp.hpcc
        assert hpcc is not None
        report = read_echo(frame, at)
        if report is None:
            return
        gbn = qp.gbn
        hpcc.on_ack(unwrap(psn, gbn.una), gbn.sent_max, report.hops)
        rate = min(qp.cfg.rate_bps, hpcc.rate_bps)
        if rate != qp.rate:
            qp.rate = rate
            samples = qp.res.rate_samples
            if not samples or abs(samples[-1][1] - rate) > 0.01 * samples[-1][1]:
                samples.append((round(t, 6), rate))

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
            stats = qp.gbn.stats
            qp.res.retransmitted_packets = stats.retransmitted_packets
            qp.res.retransmitted_bytes = stats.retransmitted_bytes
            qp.res.timeouts = stats.timeouts
            qp.res.acked_packets = qp.gbn.una
            qp.res.entropy_packets = (list(qp.entropy.packets) if len(qp.plans) > 1
                                      else [qp.res.packets])
        return SendResult(
            iface=self.cfg.iface, src_ip=self.src_ip, start=wall0, elapsed_s=elapsed,
            qps=[qp.res for qp in self.qps], pause_frames=self.pause.frames,
            paused_s=self.pause.paused_s[self.cfg.priority], partial=partial,
            tx_busy=self.tx_busy,
        )


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
