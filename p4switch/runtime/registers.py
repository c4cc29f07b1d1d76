"""`register` externs: arrays of bit<W> / int<W> cells.

Cells hold the W-bit pattern (0 .. 2**W - 1); `read_signed` gives the int<W> view. As in BMv2,
a data-plane read out of range yields None (the result stays unwritten) and a write out of
range does nothing; the control-plane `get`/`set` raise OUT_OF_RANGE instead.
"""

from __future__ import annotations

from p4switch.runtime.errors import out_of_range


class RegisterArray:
    def __init__(self, name: str, width: int, size: int, signed: bool = False) -> None:
        self.name = name
        self.width = width
        self.size = size
        self.signed = signed
        self._mask = (1 << width) - 1
        self._cells = [0] * size

    def read(self, index: int) -> int | None:
        if 0 <= index < self.size:
            return self._cells[index]
        return None

    def read_signed(self, index: int) -> int | None:
        value = self.read(index)
        if value is not None and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def write(self, index: int, value: int) -> None:
        if 0 <= index < self.size:
            self._cells[index] = value & self._mask

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise out_of_range(f"register {self.name}: index {index} out of range "
                               f"(size {self.size})")

    def get(self, index: int) -> int:
        self._check(index)
        return self._cells[index]

    def set(self, index: int, value: int) -> None:
        self._check(index)
        self._cells[index] = value & self._mask

    def reset(self) -> None:
        self._cells = [0] * self.size
