"""The C traffic manager (c/tm.c) behind the interface of p4switch/switch/tm.py's
TrafficManager (the part it has: no PFC watchdog, no held_depth), for the tests that hold the
two to the same results and for the C data plane's control path."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from p4switch.cdp.build import C_DIR, load_library
from p4switch.switch.tm import Dequeued, QueueStats, check_priority

_MAX_OUT = 4096  # packets one dequeue_due call hands back (it is called again for the rest)
PORTS = 512  # CDP_TM_PORTS (c/tm.h): v1model's 9-bit ports


class _Queue(ctypes.Structure):
    _fields_ = [("capacity", ctypes.c_uint32), ("rate_pps", ctypes.c_double),
                ("items", ctypes.c_void_p), ("head", ctypes.c_uint32),
                ("count", ctypes.c_uint32), ("room", ctypes.c_uint32),
                ("last_send_at", ctypes.c_double), ("paused_until", ctypes.c_double),
                ("enqueued", ctypes.c_uint64), ("dropped", ctypes.c_uint64),
                ("dequeued", ctypes.c_uint64)]


class _Dequeued(ctypes.Structure):
    _fields_ = [("port", ctypes.c_int), ("priority", ctypes.c_int), ("item", ctypes.c_void_p),
                ("enq_time", ctypes.c_double), ("enq_qdepth", ctypes.c_uint32),
                ("deq_qdepth", ctypes.c_uint32)]


def library() -> ctypes.CDLL:
    lib = load_library("tm", [C_DIR / "tm.c"])
    tm, i, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    for name, args, res in (
            ("cdp_tm_new", [i], tm), ("cdp_tm_free", [tm], None),
            ("cdp_tm_set_depth", [tm, ctypes.c_uint32, i, i], i),
            ("cdp_tm_set_rate", [tm, d, i, i], i), ("cdp_tm_pause", [tm, i, i, d, d], i),
            ("cdp_tm_bypass", [tm, i, i, d], i),
            ("cdp_tm_enqueue", [tm, i, i, ctypes.c_void_p, d], ctypes.c_int64),
            ("cdp_tm_dequeue_due", [tm, d, ctypes.POINTER(_Dequeued), i], i),
            ("cdp_tm_next_due", [tm, ctypes.POINTER(d)], i),
            ("cdp_tm_pending", [tm], ctypes.c_uint64),
            ("cdp_tm_priority_drops", [tm], ctypes.c_uint64),
            ("cdp_tm_queue", [tm, i, i], ctypes.POINTER(_Queue)), ("cdp_tm_clear", [tm], None)):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


class CTrafficManager:
    """TrafficManager's data path and configuration, run by c/tm.c. Items are any Python
    objects (the C side holds a key for each)."""

    def __init__(self, priority_queues: int = 1, clock: Callable[[], float] | None = None):
        import time

        self.priority_queues = priority_queues
        self.clock = clock or time.monotonic
        self._lib = library()
        self._tm = self._lib.cdp_tm_new(priority_queues)
        if not self._tm:
            raise MemoryError("cdp_tm_new")
        self._items: dict[int, Any] = {}
        self._next_key = 1
        self._out = (_Dequeued * _MAX_OUT)()

    def close(self) -> None:
        if self._tm:
            self._lib.cdp_tm_free(self._tm)
            self._tm = None

    def _check(self, ok: int, port: int | None, priority: int | None) -> None:
        """ValueError, in TrafficManager's words, where C refused a queue (`ok` < 0)."""
        if ok >= 0:
            return
        check_priority(priority, self.priority_queues)
        if port is not None and not 0 <= port < PORTS:
            raise ValueError(f"port {port} out of range: the traffic manager has ports "
                             f"0-{PORTS - 1}")
        raise MemoryError("the C traffic manager has no memory for the queues of a port")

    def _prio(self, priority: int | None) -> int:
        """C's priority argument: -1 for every priority (None); one it refuses if negative."""
        if priority is None:
            return -1
        return priority if priority >= 0 else self.priority_queues

    def set_queue_depth(self, depth: int, port: int | None = None,
                        priority: int | None = None) -> None:
        if depth < 0:
            raise ValueError(f"queue depth must be >= 0, got {depth}")
        self._check(self._lib.cdp_tm_set_depth(self._tm, depth, _or(port), self._prio(priority)),
                    port, priority)

    def set_queue_rate(self, rate_pps: float, port: int | None = None,
                       priority: int | None = None) -> None:
        if rate_pps < 0:
            raise ValueError(f"queue rate must be >= 0, got {rate_pps}")
        self._check(self._lib.cdp_tm_set_rate(self._tm, rate_pps, _or(port), self._prio(priority)),
                    port, priority)

    def pause(self, port: int, priority: int, seconds: float) -> bool:
        self._check(self._lib.cdp_tm_pause(self._tm, port, priority, seconds, self.clock()),
                    port, priority)
        return True

    def resume(self, port: int, priority: int) -> None:
        self.pause(port, priority, 0)

    def bypass(self, port: int, priority: int, now: float) -> bool:
        return bool(self._lib.cdp_tm_bypass(self._tm, port, priority, now))

    def enqueue(self, port: int, priority: int, item: Any, now: float) -> int | None:
        key = self._next_key
        depth = self._lib.cdp_tm_enqueue(self._tm, port, priority, key, now)
        if depth < 0:
            return None
        self._items[key] = item
        self._next_key += 1
        return int(depth)

    def __len__(self) -> int:
        return int(self._lib.cdp_tm_pending(self._tm))

    def dequeue_due(self, now: float) -> list[Dequeued]:
        out: list[Dequeued] = []
        while True:
            n = self._lib.cdp_tm_dequeue_due(self._tm, now, self._out, _MAX_OUT)
            for d in self._out[:n]:
                out.append((d.port, d.priority, self._items.pop(d.item), d.enq_time,
                            d.enq_qdepth, d.deq_qdepth))
            if n < _MAX_OUT:
                return out

    def next_due(self) -> float | None:
        due = ctypes.c_double()
        return due.value if self._lib.cdp_tm_next_due(self._tm, ctypes.byref(due)) else None

    def _queue(self, port: int, priority: int) -> _Queue:
        q = self._lib.cdp_tm_queue(self._tm, port, priority)
        if not q:
            self._check(-1, port, priority)
        return q.contents

    def is_paused(self, port: int, priority: int) -> bool:
        return self._queue(port, priority).paused_until > self.clock()

    def set_watchdog(self, config: object | None) -> None:
        """The PFC watchdog, which this traffic manager does not have (None: off, as it is)."""
        if config is not None:
            raise ValueError("no PFC watchdog on the C data plane (p4switch --pipeline auto or "
                             "c); run the switch with --pipeline native for it")

    def held_depth(self, ingress_port: int, priority: int) -> int:
        """What the pause hold reads, which this traffic manager does not keep."""
        raise ValueError("no pause hold on the C data plane (p4switch --pipeline auto or c)")

    def watchdog_report(self) -> str:
        return "PFC watchdog: off (none on the C data plane)"

    def depth(self, port: int, priority: int = 0) -> int:
        return int(self._queue(port, priority).count)

    def stats(self, port: int, priority: int = 0) -> QueueStats:
        q = self._queue(port, priority)
        return QueueStats(enqueued=q.enqueued, dropped=q.dropped, dequeued=q.dequeued)

    @property
    def priority_drops(self) -> int:
        return int(self._lib.cdp_tm_priority_drops(self._tm))

    def clear(self) -> None:
        self._lib.cdp_tm_clear(self._tm)
        self._items.clear()


def _or(value: int | None) -> int:
    return -1 if value is None else value

