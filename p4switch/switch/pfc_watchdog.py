"""PFC watchdog in the traffic manager, with the semantics switch OSes ship (SONiC pfcwd).

Per (port, priority) queue, checked every `poll_s`:
- **stuck**: the queue is paused (by received PFC), holds packets, and has dequeued nothing for
  the whole `detection_s`. Then the action applies at once: `forward` ignores pauses and sends;
  `drop` ignores pauses, discards what the queue holds and every packet that arrives for it.
  An ignored pause stops at the port: the pipeline never sees it (p4switch/switch/pfc.py).
- **restored**: after `restoration_s` without a pause frame for the queue (counted from the
  later of the detection and the last pause received), it is lossless again: pauses are obeyed,
  arrivals queued.

Every detection and restoration is an event with its monotonic time (CLOCK_MONOTONIC, the same
clock in every process of the machine), and `drop` counts the packets it discarded per queue.
p4switch-only: BMv2's traffic manager has neither pause nor a hook for this (its watchdog is the
controller's, controller/pfc_agent.py). Runtime CLI: `pfc_watchdog <detection_ms>
<restoration_ms> <drop|forward> [<poll_ms>]`, `pfc_watchdog off`, `pfc_watchdog_stats`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p4switch.switch.tm import EgressQueue

ACTIONS = ("drop", "forward")


@dataclass(frozen=True)
class WatchdogConfig:
    detection_s: float
    restoration_s: float
    action: str = "drop"
    poll_s: float = 0.0  # 0: a quarter of the detection time (at least 5 ms)

    def __post_init__(self) -> None:
        problems = []
        if self.detection_s <= 0:
            problems.append(f"detection time must be > 0, got {self.detection_s * 1000:g} ms")
        if self.restoration_s <= 0:
            problems.append(f"restoration time must be > 0, got {self.restoration_s * 1000:g} ms")
        if self.action not in ACTIONS:
            problems.append(f"action must be one of {', '.join(ACTIONS)}, got {self.action!r}")
        if self.poll_s < 0:
            problems.append(f"poll interval must be >= 0, got {self.poll_s * 1000:g} ms")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def interval(self) -> float:
        return self.poll_s or max(0.005, self.detection_s / 4)


@dataclass(frozen=True)
class WatchdogEvent:
    t: float  # monotonic seconds
    port: int
    priority: int
    kind: str  # "stuck" | "restored"
    dropped: int = 0  # stuck: packets discarded from the queue; restored: all it dropped while
    # stuck (those and the arrivals)


@dataclass
class _Suspect:
    since: float
    dequeued: int


@dataclass
class QueueWatchdog:
    """The watchdog's state; the traffic manager calls `poll` and asks `restore_due`."""

    config: WatchdogConfig
    next_poll: float = 0.0
    events: list[WatchdogEvent] = field(default_factory=list)
    _suspects: dict[tuple[int, int], _Suspect] = field(default_factory=dict)
    _drops_before: dict[tuple[int, int], int] = field(default_factory=dict)  # at detection

    def poll(self, ports: dict[int, list[EgressQueue]], now: float,
             flush: Callable[[EgressQueue], int] | None = None) -> None:
        """One round over every queue; `flush(q) -> int` discards a queue's packets (drop)."""
        self.next_poll = now + self.config.interval
        for port, queues in ports.items():
            for prio, q in enumerate(queues):
                key = (port, prio)
                if q.stuck:
                    self.restore_due(q, port, prio, now)
                    continue
                if not (q.items and q.paused_until > now):
                    self._suspects.pop(key, None)
                    continue
                seen = self._suspects.get(key)
                if seen is None or seen.dequeued != q.stats.dequeued:
                    self._suspects[key] = _Suspect(now, q.stats.dequeued)
                elif now - seen.since >= self.config.detection_s:
                    del self._suspects[key]
                    self._declare(q, port, prio, now, flush)

    def _declare(self, q: EgressQueue, port: int, prio: int, now: float,
                 flush: Callable[[EgressQueue], int] | None) -> None:
        q.stuck = True
        q.stuck_at = now
        q.paused_until = min(q.paused_until, now)  # ignore the pause it is under
        self._drops_before[(port, prio)] = q.stats.watchdog_drops
        dropped = 0
        if self.config.action == "drop" and flush is not None:
            dropped = flush(q)
        self.events.append(WatchdogEvent(now, port, prio, "stuck", dropped))

    def restore_due(self, q: EgressQueue, port: int, prio: int, now: float) -> bool:
        """Restore a stuck queue whose restoration time has passed without a pause (the event
        carries the time it became due); True if the queue is (now) lossless."""
        if not q.stuck:
            return True
        due = max(q.stuck_at, q.pause_rx_at) + self.config.restoration_s
        if now < due:
            return False
        q.stuck = False
        dropped = q.stats.watchdog_drops - self._drops_before.pop((port, prio), 0)
        self.events.append(WatchdogEvent(due, port, prio, "restored", dropped))
        return True

    def describe(self, now: float, ports: dict[int, list[EgressQueue]]) -> str:
        """`pfc_watchdog_stats`: the setting, then one line per event, then stuck queues."""
        c = self.config
        lines = [f"watchdog detection_ms {c.detection_s * 1000:g} restoration_ms "
                 f"{c.restoration_s * 1000:g} action {c.action} poll_ms {c.interval * 1000:g} "
                 f"now {now:.6f}"]
        lines += [f"event {e.kind} t {e.t:.6f} port {e.port} priority {e.priority} "
                  f"dropped {e.dropped}" for e in self.events]
        lines += [f"queue port {port} priority {prio} stuck {int(q.stuck)} "
                  f"watchdog_drops {q.stats.watchdog_drops}"
                  for port, qs in sorted(ports.items()) for prio, q in enumerate(qs)
                  if q.stuck or q.stats.watchdog_drops]
        return "\n".join(lines)
