"""Reorder buffer: releases packets in sequence order, as a receiving NIC does for sprayed flows.

Packets are pushed with an (unwrapped) sequence number: the DLB tag's `seq` when present, the
PSN otherwise. The buffer releases the longest in-order run it holds; a hole whose oldest waiting
packet is older than `timeout_s`, or a full buffer, is given up on (the missing packets count as
skipped) and release continues after it. A packet arriving behind the release point (a duplicate,
or one given up on) is dropped and counted as `late`.
"""

from __future__ import annotations

from typing import Any


class ReorderBuffer:
    def __init__(self, first_seq: int = 0, capacity: int = 4096, timeout_s: float = 0.1) -> None:
        if capacity <= 0:
            raise ValueError(f"reorder buffer capacity must be > 0, got {capacity}")
        if timeout_s <= 0:
            raise ValueError(f"reorder timeout must be > 0 s, got {timeout_s}")
        self.next_seq = first_seq
        self.capacity = capacity
        self.timeout_s = timeout_s
        self._held: dict[int, tuple[float, Any]] = {}
        self._oldest = float("inf")  # arrival time of the oldest held packet
        self.max_occupancy = 0
        self.skipped = 0
        self.late = 0
        self.released = 0

    @property
    def occupancy(self) -> int:
        return len(self._held)

    def push(self, seq: int, item: Any, now: float) -> list[Any]:
        """Add one packet; returns the items released in order by its arrival."""
        if seq < self.next_seq or seq in self._held:
            self.late += 1
            return []
        if seq == self.next_seq and not self._held:  # the common, in-order case
            self.next_seq += 1
            self.released += 1
            return [item]
        self._held[seq] = (now, item)
        self._oldest = min(self._oldest, now)
        out = self._release()
        if len(self._held) >= self.capacity:
            out += self._skip_hole()
        out += self.expire(now)
        if len(self._held) > self.max_occupancy:  # packets left waiting after this arrival
            self.max_occupancy = len(self._held)
        return out

    def expire(self, now: float) -> list[Any]:
        """Give up on holes that have been waited on for longer than the timeout."""
        out: list[Any] = []
        while self._held and now - self._oldest > self.timeout_s:
            out += self._skip_hole()
        return out

    def release_all(self) -> list[Any]:
        """Release everything held in sequence order, treating the holes as not real (the caller
        knows nothing is missing, e.g. a switch's tag counter skipped numbers)."""
        order = sorted(self._held)
        out = [self._held.pop(seq)[1] for seq in order]
        if out:
            self.next_seq = order[-1] + 1
            self.released += len(out)
        self._oldest = float("inf")
        return out

    def flush(self) -> list[Any]:
        """Release everything held, giving up on every hole (end of a run)."""
        out: list[Any] = []
        while self._held:
            out += self._skip_hole()
        return out

    def _skip_hole(self) -> list[Any]:
        first = min(self._held)
        self.skipped += first - self.next_seq
        self.next_seq = first
        return self._release()

    def _release(self) -> list[Any]:
        out = []
        held = self._held
        while self.next_seq in held:
            out.append(held.pop(self.next_seq)[1])
            self.next_seq += 1
        self.released += len(out)
        if out:
            self._oldest = min((t for t, _ in held.values()), default=float("inf"))
        return out
