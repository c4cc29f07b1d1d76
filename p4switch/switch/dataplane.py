"""The data-plane loop: ports -> engine ingress -> traffic manager -> engine egress -> ports.

One thread does everything (epoll over the port sockets, the link monitor and a wake-up pipe,
with the traffic manager's next due time as timeout): the engine is single-threaded and a single
thread avoids GIL ping-pong between receive, pipeline and transmit threads. Packet-outs from
the P4Runtime server are queued with `inject` and picked up by the loop.

`run_dataplanes` serves several switches' data planes from one such loop (a switch group:
`p4switch ARGS :: ARGS ...`, `process.run_switches`): a frame one of them sends to a veth whose
peer another one reads is already waiting on that port when the loop polls again, so a packet
crosses the group's switches in one wake-up of one process.

A packet whose queue is empty, unlimited and not paused goes from ingress straight to egress
(queue depths 0, timedelta 0), as it would leave at once anyway; only backlogged, rate-limited
or paused queues hold packets in the traffic manager.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from p4switch.switch.device import Device
from p4switch.switch.linkmon import LinkMonitor
from p4switch.switch.pfc import PauseHold, PfcReceiver
from p4switch.switch.ports import RawPort
from p4switch.switch.tm import TrafficManager

log = logging.getLogger("p4switch.dataplane")

MAX_ROUNDS = 64  # egress passes per wake-up (bounds recirculation loops)


class DataplaneStats:
    def __init__(self) -> None:
        self.engine_errors = 0
        self.tx_unknown_port = 0
        self.tm_drops = 0


class Dataplane:
    def __init__(self, device: Device, ports: dict[int, RawPort], tm: TrafficManager,
                 linkmon: LinkMonitor | None = None):
        self.device = device
        self.ports = ports
        self.tm = tm
        self.linkmon = linkmon
        self.stats = DataplaneStats()
        self.packet_in: Callable[[bytes], None] | None = None  # frames sent to the CPU port
        self.trace: Callable[[str], None] | None = None  # per-packet log lines (-L trace)
        self.pfc: PfcReceiver | None = None  # honours received PFC frames (p4switch-only)
        # refreshes the pauses it sent while the buffer holds their port's traffic (pfc_hold)
        self.pause_hold = PauseHold(tm.held_depth, self._pfc_link_bps)
        self._injected: deque[tuple[int, bytes]] = deque()
        self._unflushed: set[RawPort] = set()  # ports sent to in this pass: flushed at its end
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._stopping = threading.Event()
        self._start = device.start
        device.on_install(self._on_install)

    # -- called from other threads --------------------------------------------------------
    def _on_install(self) -> None:
        """A program was installed (under the lock): the queues start empty."""
        self.tm.clear()

    def inject(self, port: int, data: bytes) -> None:
        """Run `data` through the pipeline as if received on `port` (packet-out)."""
        self._injected.append((port, data))
        self._wake()

    def stop(self) -> None:
        self._stopping.set()
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # full pipe: already awake
            os.write(self._wake_w, b"x")

    @property
    def wake_fd(self) -> int:
        """The write end of the pipe that wakes the loop (non-blocking): `signal.set_wakeup_fd`
        takes it, so a signal wakes a loop running in C, where no Python handler can run."""
        return self._wake_w

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> None:
        run_dataplanes([self])

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def handlers(self) -> dict[int, Callable[[], None]]:
        """What the loop calls when each of this data plane's descriptors is readable."""
        handlers: dict[int, Callable[[], None]] = {}
        for port in self.ports.values():
            handlers[port.fileno()] = self._receiver(port)
        handlers[self._wake_r] = self._on_wake
        if self.linkmon is not None:
            handlers[self.linkmon.fileno()] = self.linkmon.handle
        return handlers

    def next_due(self) -> float | None:
        """The monotonic time of this data plane's next timed work (None: none pending)."""
        due = self.tm.next_due()
        hold = self.pause_hold
        if hold.threshold is not None:
            held = hold.next_due()
            due = held if due is None else due if held is None else min(due, held)
        return due

    def serve(self, ready: list[Callable[[], None]]) -> None:
        """One pass: the ready descriptors' handlers, due pause refreshes, the queues, then
        one transmit burst per port sent to."""
        hold = self.pause_hold
        if not ready and not len(self.tm) and hold.threshold is None:
            return
        with self.device.lock:
            for handler in ready:
                handler()
            if hold.threshold is not None:
                for number, frame in hold.due(time.monotonic()):
                    self._transmit(number, frame)
            if len(self.tm):
                self._service_queues()
            for port in self._unflushed:
                port.flush()
            self._unflushed.clear()

    def _receiver(self, port: RawPort) -> Callable[[], None]:
        number, recv, ingress = port.number, port.recv_batch, self._ingress

        def receive() -> None:
            try:
                frames = recv()
            except OSError as exc:  # e.g. the interface was set down or deleted
                log.debug("port %d: receive error %s", number, exc)
                return
            for frame in frames:
                ingress(number, frame)

        return receive

    def _on_wake(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        while self._injected:
            port, data = self._injected.popleft()
            self._ingress(port, data)

    def _ingress(self, port: int, data: bytes) -> None:
        engine = self.device.engine
        trace = self.trace
        if trace is not None:
            trace(f"port {port}: received {len(data)} bytes: {data[:32].hex()}")
        if self.pfc is not None and data.startswith(b"\x88\x08", 12):
            applied = self.pfc.handle(port, data)
            if applied is False:
                if trace is not None:
                    trace(f"port {port}: PFC frame ignored: every queue it pauses is stuck")
                return
            if applied and trace is not None:
                trace(f"port {port}: PFC frame applied to its egress queues")
        if engine is None:
            return
        try:
            items = engine.ingress(port, data)
        except Exception:
            self.stats.engine_errors += 1
            log.exception("engine error in ingress (port %d, %d bytes); packet dropped",
                          port, len(data))
            return
        if not items:
            return
        now = time.monotonic()
        bypass, enqueue = self.tm.bypass, self.tm.enqueue
        for item in items:
            if bypass(item.egress_port, item.priority, now):
                self._egress(engine, item, now, 0, 0, now)
            elif enqueue(item.egress_port, item.priority, item, now) is None:
                self.stats.tm_drops += 1
                if trace is not None:
                    trace(f"queue (port {item.egress_port}, priority {item.priority}) full "
                          "or no such priority: packet dropped")

    def _enqueue(self, items: list) -> None:
        now = time.monotonic()
        enqueue = self.tm.enqueue
        for item in items:
            if enqueue(item.egress_port, item.priority, item, now) is None:
                self.stats.tm_drops += 1

    def _service_queues(self) -> None:
        engine, tm = self.device.engine, self.tm
        for _ in range(MAX_ROUNDS):
            now = time.monotonic()
            batch = tm.dequeue_due(now)
            if not batch:
                return
            for _port, _prio, item, enq_time, enq_qdepth, deq_qdepth in batch:
                self._egress(engine, item, enq_time, enq_qdepth, deq_qdepth, now)

    def _egress(self, engine, item, enq_time: float, enq_qdepth: int, deq_qdepth: int,
                now: float) -> None:
        """Egress pipeline for one dequeued packet; what it sends back goes to the queues."""
        try:
            frame, more = engine.egress_frame(
                item, int((enq_time - self._start) * 1e6) & 0xFFFFFFFF, enq_qdepth,
                deq_qdepth, int((now - enq_time) * 1e6))
        except Exception:
            self.stats.engine_errors += 1
            log.exception("engine error in egress; packet dropped")
            return
        if frame is not None:
            self._transmit(item.egress_port, frame)
        if more:
            self._enqueue(more)

    def _transmit(self, port: int, frame: bytes) -> None:
        if self.trace is not None:
            self.trace(f"port {port}: transmit {len(frame)} bytes: {frame[:32].hex()}")
        p = self.ports.get(port)
        if p is not None:
            if self.pause_hold.threshold is not None and frame[12:14] == b"\x88\x08":
                self.pause_hold.on_transmit(port, frame, time.monotonic())
            p.send(frame)
            self._unflushed.add(p)
        elif port == self.device.cpu_port and self.packet_in is not None:
            self.packet_in(frame)
        else:
            self.stats.tx_unknown_port += 1

    def _pfc_link_bps(self, port: int) -> float:
        """The rate PFC quanta refer to on `port` (the receiver's; 10 Gb/s without PFC)."""
        return self.pfc.link_bps(port) if self.pfc is not None else 10e9

    def close(self) -> None:
        os.close(self._wake_r)
        os.close(self._wake_w)


def run_dataplanes(dataplanes: Sequence[Dataplane]) -> None:
    """Serve `dataplanes` from this thread until one of them is stopped."""
    ep = select.epoll()
    owner: dict[int, tuple[int, Callable[[], None]]] = {}
    for index, dataplane in enumerate(dataplanes):
        for fd, handler in dataplane.handlers().items():
            owner[fd] = (index, handler)
            ep.register(fd, select.EPOLLIN)
    clock = time.monotonic
    ready: list[list[Callable[[], None]]] = [[] for _ in dataplanes]
    try:
        while not any(dataplane.stopping for dataplane in dataplanes):
            dues = [due for dataplane in dataplanes if (due := dataplane.next_due()) is not None]
            timeout = max(0.0, min(dues) - clock()) if dues else -1.0
            for fd, _ in ep.poll(timeout):
                index, handler = owner[fd]
                ready[index].append(handler)
            for dataplane, handlers in zip(dataplanes, ready, strict=True):
                dataplane.serve(handlers)
                handlers.clear()
    finally:
        ep.close()
