"""BMv2-style handle allocation: the smallest free non-negative integer (`bm_sim/handle_mgr.h`)."""

from __future__ import annotations

import heapq


class HandleAllocator:
    """Hands out the smallest free handle; released handles are reused first."""

    def __init__(self) -> None:
        self._next = 0  # every handle >= _next is free
        self._free: list[int] = []  # released handles below _next (a heap)
        self._used: set[int] = set()

    def get(self) -> int:
        if self._free:
            handle = heapq.heappop(self._free)
        else:
            handle = self._next
            self._next += 1
        self._used.add(handle)
        return handle

    def release(self, handle: int) -> None:
        self._used.remove(handle)
        heapq.heappush(self._free, handle)

    def __contains__(self, handle: int) -> bool:
        return handle in self._used

    def __len__(self) -> int:
        return len(self._used)

    def clear(self) -> None:
        self._next = 0
        self._free.clear()
        self._used.clear()
