"""Indexed counters (`counter` extern): packets and bytes per index."""

from __future__ import annotations

from p4switch.runtime.errors import invalid, out_of_range


class CounterArray:
    def __init__(self, name: str, size: int, unit: str = "packets_and_bytes") -> None:
        self.name = name
        self.size = size
        self.unit = unit
        self._packets = [0] * size
        self._bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        """Data plane: one packet of nbytes; an index out of range is ignored."""
        if 0 <= index < self.size:
            self._packets[index] += 1
            self._bytes[index] += nbytes

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise out_of_range(f"counter {self.name}: index {index} out of range "
                               f"(size {self.size})")

    def read(self, index: int) -> tuple[int, int]:
        self._check(index)
        return self._packets[index], self._bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        self._check(index)
        if packets < 0 or nbytes < 0:
            raise invalid(f"counter {self.name}: counts cannot be negative")
        self._packets[index] = packets
        self._bytes[index] = nbytes

    def reset(self) -> None:
        self._packets = [0] * self.size
        self._bytes = [0] * self.size
