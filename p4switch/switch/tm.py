"""Traffic manager: per-(port, priority) egress queues modelled on BMv2's simple_switch.

- FIFO per (egress port, priority), capacity 64 packets by default, tail drop.
- Optional rate limit in packets/s per queue: at enqueue a packet gets
  `send_at = max(now, previous send_at + 1/rate)` (rate 0 = unlimited), as BMv2 does.
- Strict priority within a port: the highest priority whose head is due is served first.
- p4switch-only: a queue can be paused for a duration (`pause(port, priority, seconds)`), the
  mechanism a PFC implementation needs; BMv2 has no equivalent. A paused queue keeps accepting
  (and tail-dropping) packets but is not served until the pause expires or `resume` is called.
  Then it drains at its rate again, from the moment it resumed: the backlog a pause built up
  is not sent as one burst (802.1Qbb: a MAC resumes at its link rate).
- p4switch-only: a PFC watchdog (`set_watchdog`, p4switch/switch/pfc_watchdog.py) declares a
  paused, non-empty queue that dequeued nothing for its detection time stuck, ignores its
  pauses (and with `drop` discards its packets) until no pause came for the restoration time.

Not thread-safe: the data-plane loop and the runtime commands share one lock held by the caller.
Times are `time.monotonic()` seconds; the queue fields handed to egress are in µs / packets.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from p4switch.switch.pfc_watchdog import QueueWatchdog, WatchdogConfig

DEFAULT_DEPTH = 64


@dataclass
class QueueStats:
    enqueued: int = 0
    dropped: int = 0
    dequeued: int = 0
    watchdog_drops: int = 0  # discarded by the PFC watchdog (action drop)


@dataclass
class EgressQueue:
    capacity: int
    rate_pps: float
    items: deque = field(default_factory=deque)  # (send_at, enq_time, enq_qdepth, item)
    last_send_at: float = float("-inf")
    paused_until: float = 0.0
    stats: QueueStats = field(default_factory=QueueStats)
    stuck: bool = False  # declared stuck by the PFC watchdog: pauses ignored
    stuck_at: float = 0.0
    pause_rx_at: float = float("-inf")  # the last pause (quanta > 0) received


# What dequeue_due returns per packet (a plain tuple: this is the hot path):
# (port, priority, item, enq_time (monotonic s), enq_qdepth (before the push), deq_qdepth (after
# the pop))
Dequeued = tuple[int, int, Any, float, int, int]


def check_priority(priority: int | None, priority_queues: int) -> None:
    """ValueError (what the runtime CLI answers) for a priority the switch has no queue of."""
    if priority is not None and not 0 <= priority < priority_queues:
        raise ValueError(f"priority {priority} out of range: the switch has "
                         f"{priority_queues} priority queue(s) per port")


class TrafficManager:
    def __init__(self, priority_queues: int = 1, clock: Callable[[], float] | None = None):
        import time

        self.priority_queues = priority_queues
        self.clock = clock or time.monotonic
        self.default_depth = DEFAULT_DEPTH
        self.default_rate = 0.0
        self._ports: dict[int, list[EgressQueue]] = {}
        self._busy: dict[int, list[EgressQueue]] = {}  # ports with packets queued
        self._pending = 0  # packets queued across all queues
        self.priority_drops = 0
        self.watchdog: QueueWatchdog | None = None

    # -- configuration (runtime CLI) ------------------------------------------------------
    def queues(self, port: int) -> list[EgressQueue]:
        qs = self._ports.get(port)
        if qs is None:
            qs = [EgressQueue(self.default_depth, self.default_rate)
                  for _ in range(self.priority_queues)]
            self._ports[port] = qs
        return qs

    def _select(self, port: int | None, priority: int | None) -> list[EgressQueue]:
        check_priority(priority, self.priority_queues)
        if port is None:
            return [q for qs in self._ports.values() for q in qs]
        qs = self.queues(port)
        return qs if priority is None else [qs[priority]]

    def set_queue_depth(self, depth: int, port: int | None = None,
                        priority: int | None = None) -> None:
        """Capacity in packets; without a port: every queue and the default for new ports."""
        if depth < 0:
            raise ValueError(f"queue depth must be >= 0, got {depth}")
        if port is None:
            self.default_depth = depth
        for q in self._select(port, priority):
            q.capacity = depth

    def set_queue_rate(self, rate_pps: float, port: int | None = None,
                       priority: int | None = None) -> None:
        """Rate limit in packets/s (0 = unlimited); without a port: every queue and the default."""
        if rate_pps < 0:
            raise ValueError(f"queue rate must be >= 0, got {rate_pps}")
        if port is None:
            self.default_rate = rate_pps
        for q in self._select(port, priority):
            q.rate_pps = rate_pps

    def set_watchdog(self, config: WatchdogConfig | None) -> None:
        """Turn the PFC watchdog on with `config` (its events start afresh), or off (None:
        every stuck queue is lossless again at once)."""
        self.watchdog = None if config is None else QueueWatchdog(config, self.clock())
        if config is None:
            for q in self._select(None, None):
                q.stuck = False

    def watchdog_poll(self, now: float) -> None:
        """One watchdog round (the data path runs it every poll interval while queues hold
        packets; the runtime CLI before it reports)."""
        if self.watchdog is not None:
            self.watchdog.poll(self._ports, now, self._flush)

    def watchdog_report(self) -> str:
        """The watchdog's setting, events and stuck queues (after a round), or "watchdog off"."""
        if self.watchdog is None:
            return "watchdog off"
        now = self.clock()
        self.watchdog.poll(self._ports, now, self._flush)
        return self.watchdog.describe(now, self._ports)

    def _flush(self, q: EgressQueue) -> int:
        dropped = len(q.items)
        q.items.clear()
        self._pending -= dropped
        q.stats.watchdog_drops += dropped
        return dropped

    def _stuck_drops(self, q: EgressQueue, port: int, priority: int, now: float) -> bool:
        """True if a packet for stuck queue `q` is to be discarded (watchdog action drop)."""
        wd = self.watchdog
        if wd is None:
            q.stuck = False
            return False
        return not wd.restore_due(q, port, priority, now) and wd.config.action == "drop"

    def pause(self, port: int, priority: int, seconds: float) -> bool:
        """Stop serving one queue for `seconds` (p4switch-only; 0 resumes at once). False if
        the queue ignored the pause: the PFC watchdog holds it stuck."""
        q = self._select(port, priority)[0]
        now = self.clock()
        if seconds > 0 and q.stuck:
            restored = self.watchdog is None or self.watchdog.restore_due(q, port, priority, now)
            q.pause_rx_at = now
            if not restored:
                return False  # a stuck queue ignores pauses
            q.stuck = False
        if seconds > 0:
            q.pause_rx_at = now
            q.paused_until = now + seconds
        elif q.paused_until > now:
            q.paused_until = now  # the resume time paces the backlog (dequeue_due)
        return True

    def resume(self, port: int, priority: int) -> None:
        self.pause(port, priority, 0)

    def is_paused(self, port: int, priority: int) -> bool:
        return self._select(port, priority)[0].paused_until > self.clock()

    def held_depth(self, ingress_port: int, priority: int) -> int:
        """The deepest `priority` queue that holds a packet which came in on `ingress_port`
        (0: none does)."""
        deepest = 0
        for qs in self._busy.values():
            if priority < len(qs):
                items = qs[priority].items
                if len(items) > deepest and any(e[3].sm.ingress_port == ingress_port
                                                for e in items):
                    deepest = len(items)
        return deepest

    def depth(self, port: int, priority: int = 0) -> int:
        return len(self._select(port, priority)[0].items)

    def stats(self, port: int, priority: int = 0) -> QueueStats:
        return self._select(port, priority)[0].stats

    # -- data path ---------------------------------------------------------------------------
    def bypass(self, port: int, priority: int, now: float) -> bool:
        """True when a packet for this queue would leave at once (queue empty, no rate limit,
        not paused): the caller sends it through egress directly, with queue depths 0. The
        packet is counted as enqueued and dequeued."""
        qs = self._ports.get(port) or self.queues(port)
        if not 0 <= priority < len(qs):
            return False
        q = qs[priority]
        if q.items or q.rate_pps > 0 or q.capacity == 0 or q.paused_until > now or q.stuck:
            return False
        q.stats.enqueued += 1
        q.stats.dequeued += 1
        return True

    def enqueue(self, port: int, priority: int, item: Any, now: float) -> int | None:
        """Queue an item; returns enq_qdepth, or None if it was dropped."""
        if not 0 <= priority < self.priority_queues:
            self.priority_drops += 1
            return None
        q = (self._ports.get(port) or self.queues(port))[priority]
        if q.stuck and self._stuck_drops(q, port, priority, now):
            q.stats.watchdog_drops += 1
            return None
        depth = len(q.items)
        if depth >= q.capacity:
            q.stats.dropped += 1
            return None
        if q.rate_pps > 0:
            send_at = max(now, q.last_send_at + 1.0 / q.rate_pps)
            q.last_send_at = send_at
        else:
            send_at = now
        q.items.append((send_at, now, depth, item))
        q.stats.enqueued += 1
        self._pending += 1
        self._busy[port] = self._ports[port]
        return depth

    def __len__(self) -> int:
        return self._pending

    def dequeue_due(self, now: float) -> list[Dequeued]:
        """Pop every packet that is due at `now`, serving each port by strict priority."""
        out: list[Dequeued] = []
        if not self._pending:
            return out
        if self.watchdog is not None and now >= self.watchdog.next_poll:
            self.watchdog.poll(self._ports, now, self._flush)
        for port, qs in list(self._busy.items()):
            while True:
                for prio in range(len(qs) - 1, -1, -1):
                    q = qs[prio]
                    if not q.items or q.paused_until > now:
                        continue
                    if q.items[0][0] < q.paused_until:  # the head waited out a pause
                        self._repace(q)
                    if q.items[0][0] <= now:
                        send_at, enq_time, enq_qdepth, item = q.items.popleft()
                        q.stats.dequeued += 1
                        self._pending -= 1
                        out.append((port, prio, item, enq_time, enq_qdepth, len(q.items)))
                        break
                else:
                    break
            if not any(q.items for q in qs):
                del self._busy[port]
        return out

    @staticmethod
    def _repace(q: EgressQueue) -> None:
        """Departure times after a pause: from the resume time on, at the queue's rate."""
        gap = 1.0 / q.rate_pps if q.rate_pps > 0 else 0.0
        t = q.paused_until
        items: deque = deque()
        for send_at, enq_time, enq_qdepth, item in q.items:
            t = max(send_at, t)
            items.append((t, enq_time, enq_qdepth, item))
            t += gap
        q.items = items
        q.last_send_at = max(q.last_send_at, t - gap)

    def next_due(self) -> float | None:
        """Monotonic time at which the next packet becomes due (None: nothing queued)."""
        if not self._pending:
            return None
        due = None
        for qs in self._busy.values():
            for q in qs:
                if q.items:
                    t = max(q.items[0][0], q.paused_until)
                    if due is None or t < due:
                        due = t
        if self.watchdog is not None and due is not None:
            due = min(due, self.watchdog.next_poll)
        return due

    def clear(self) -> None:
        for qs in self._ports.values():
            for q in qs:
                q.items.clear()
        self._busy.clear()
        self._pending = 0
