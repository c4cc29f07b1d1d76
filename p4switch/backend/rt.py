"""Helpers the generated code calls at run time (per packet; keep them small and fast)."""

from __future__ import annotations

import random as _random
import sys


class ParserError(Exception):
    """Raised inside a generated parser; `code` is the P4 error's number."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class AssertFailed(Exception):
    """A v1model assert()/assume() failed (BMv2 aborts; the engine drops the packet)."""


class HeaderStack:
    """A header stack. `blank(cls, size)` makes one whose elements are created on first use, so
    a packet that never touches the stack (most packets, for INT's record stack) pays one object,
    not `size` headers; an unmaterialised stack is all invalid and emits nothing."""

    __slots__ = ("_items", "_make", "_size", "next_index")

    def __init__(self, items: list):
        self._items: list | None = items
        self._make = type(items[0]) if items else None
        self._size = len(items)
        self.next_index = 0

    @classmethod
    def blank(cls, make: type, size: int) -> HeaderStack:
        stack = cls.__new__(cls)
        stack._items = None
        stack._make = make
        stack._size = size
        stack.next_index = 0
        return stack

    @property
    def items(self) -> list:
        items = self._items
        if items is None:
            make = self._make
            assert make is not None
            items = self._items = [make() for _ in range(self._size)]
        return items

    def at(self, index: int):
        """Element `index`; out of range (a run-time index) gives a detached blank element,
        so reads see zeros and writes go nowhere (as p4c's BMv2 back end compiles them)."""
        if 0 <= index < self._size:
            return self.items[index]
        make = self._make
        assert make is not None
        return make()

    def checked(self, index: int, error_code: int):
        """Element `index` for the parser: out of range is a StackOutOfBounds error."""
        if 0 <= index < self._size:
            return self.items[index]
        raise ParserError(error_code)

    def _copy(self) -> HeaderStack:
        if self._items is None:
            c = HeaderStack.blank(self._make, self._size)  # type: ignore[arg-type]
        else:
            c = HeaderStack([h._copy() for h in self._items])
        c.next_index = self.next_index
        return c

    def _assign(self, other: HeaderStack) -> None:
        if self._items is not None or other._items is not None:
            for mine, theirs in zip(self.items, other.items, strict=False):
                mine._assign(theirs)
        self.next_index = other.next_index

    def _eq(self, other: HeaderStack) -> bool:
        if self._items is None and other._items is None:
            return True
        return all(a._eq(b) for a, b in zip(self.items, other.items, strict=False))

    def _emit(self, out: bytearray) -> None:
        items = self._items
        if items is not None:
            for h in items:
                h._emit(out)

    def _zero(self) -> None:
        if self._items is not None:
            for h in self._items:
                h._valid = False
        self.next_index = 0

    def push_front(self, count: int) -> None:
        items = self.items
        n = len(items)
        for i in range(n - 1, -1, -1):
            if i >= count:
                items[i]._assign(items[i - count])
            else:
                items[i]._valid = False
        self.next_index = min(self.next_index + count, n)

    def pop_front(self, count: int) -> None:
        items = self.items
        n = len(items)
        for i in range(n):
            if i + count < n:
                items[i]._assign(items[i + count])
            else:
                items[i]._valid = False
        self.next_index = max(self.next_index - count, 0)


class PacketContext:
    """Per-packet state the externs and the engine share (one per pipeline pass)."""

    __slots__ = ("clone", "digest", "length", "parser_offset", "payload", "recirculate",
                 "resubmit", "truncate")

    def __init__(self, length: int, payload: bytes = b""):
        self.length = length  # standard_metadata.packet_length as received
        self.payload = payload  # the bytes after the parsed headers
        self.clone: tuple[int, int] | None = None  # (session, field list or -1)
        self.resubmit: int | None = None  # field list index
        self.recirculate: int | None = None  # field list index
        self.truncate: int | None = None  # bytes to keep: the least truncate() asked
        self.digest: tuple | None = None  # (name, values at the end of ingress)
        self.parser_offset = 0


    def cut(self, length: int) -> None:
        """truncate(length): BMv2's Packet::truncate keeps the smallest length asked."""
        if self.truncate is None or length < self.truncate:
            self.truncate = length


def signed(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def shl(value: int, amount: int, width: int) -> int:
    return (value << amount) & ((1 << width) - 1) if amount < width else 0


def shl_signed(value: int, amount: int, width: int) -> int:
    return signed(value << amount, width) if amount < width else 0


def div(a: int, b: int) -> int:
    return a // b if b else 0


def mod(a: int, b: int) -> int:
    return a % b if b else 0


def csum16(data: bytes) -> int:
    """RFC 1071 checksum (same result as runtime.hashing.csum16), summing in C: the ones'
    complement sum is byte-order independent, so native 16-bit words are summed and the
    folded result byte-swapped back."""
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    total = sum(memoryview(data).cast("H"))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    if _LITTLE:
        total = ((total & 0xFF) << 8) | (total >> 8)
    return ~total & 0xFFFF


_LITTLE = sys.byteorder == "little"


def csum16_int(value: int) -> int:
    """csum16 over the bytes of `value` (its bits padded to whole 16-bit words), without
    making the bytes: as 2**16 = 1 (mod 0xFFFF), the ones' complement sum of the words is
    `value` mod 0xFFFF, except that a nonzero multiple of 0xFFFF sums to 0xFFFF, not 0."""
    s = value % 0xFFFF
    return 0 if not s and value else ~s & 0xFFFF


def csum16_int_expr(value: str, v: str, r: str) -> str:
    """`csum16_int(value)` as one Python expression (the generated code saves the call);
    `v` and `r` name two temporaries."""
    return f"(0 if not ({r} := ({v} := {value}) % 0xFFFF) and {v} else ~{r} & 0xFFFF)"


def pack_int(acc: int, nbits: int) -> bytes:
    """`nbits` bits of `acc`, MSB first, zero-padded to whole bytes."""
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) >> 3, "big")


def rand(lo: int, hi: int) -> int:
    return _random.randint(lo, hi)


def format_log(msg: str, values: tuple) -> str:
    out = []
    parts = msg.split("{}")
    for i, part in enumerate(parts):
        out.append(part)
        if i < len(parts) - 1:
            out.append(str(values[i]) if i < len(values) else "{}")
    return "".join(out)
