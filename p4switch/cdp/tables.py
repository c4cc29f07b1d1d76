"""The C data plane's match tables, action selector groups and hash algorithms (c/tables.c,
c/selector.c, c/hashing.c) behind small Python classes: for the tests that hold them to the
Python runtime (p4switch/runtime/lookup.py, action_profiles.py, hashing.py) and for the
control-plane mirror that will keep the C copies of the runtime's tables.

    table = CTable(runtime_table.match_fields)
    table.insert(entry, action_data_index)   # an entry the runtime's Table has accepted
    table.lookup((dst_addr,))                # (action_data_index, entry.handle) or None
"""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Callable, Iterable, Sequence

from p4switch.cdp.build import C_DIR, load_library
from p4switch.cpmodel import MatchField
from p4switch.runtime.entries import Entry
from p4switch.runtime.hashing import ALGORITHMS

MAX_PORTS = 512  # v1model's 9-bit ports: the port-up bitmap's default size

_KINDS = {"exact": 0, "lpm": 1, "ternary": 2, "range": 3, "optional": 4}  # enum cdp_match_kind
_ERRORS: dict[int, tuple[type[Exception], str]] = {  # CDP_TABLE_*
    -1: (KeyError, "an entry with this handle index, or this match and priority, exists"),
    -2: (KeyError, "no entry with this handle"),
    -3: (ValueError, "a match its field's kind cannot have"),
    -4: (MemoryError, "out of memory"),
}
_SELECT_NONE, _SELECT_NO_GROUP = -1, -2


class _KeyField(ctypes.Structure):
    _fields_ = [("width", ctypes.c_uint32), ("kind", ctypes.c_int)]


class _FieldMatch(ctypes.Structure):
    _fields_ = [("value", ctypes.c_char_p), ("mask", ctypes.c_char_p),
                ("high", ctypes.c_char_p), ("prefix_len", ctypes.c_uint32)]


class _Member(ctypes.Structure):
    _fields_ = [("handle", ctypes.c_uint32), ("watch_port", ctypes.c_int64)]


SOURCES = (C_DIR / "tables.c", C_DIR / "selector.c", C_DIR / "hashing.c")


def library() -> ctypes.CDLL:
    """c/tables.c, c/selector.c and c/hashing.c, built once per content and compiler
    (NativeUnavailable: no compiler)."""
    return configure(load_library("tables", list(SOURCES)))


def configure(lib: ctypes.CDLL) -> ctypes.CDLL:
    """The argument and result types of the SOURCES' functions in `lib`, a library built with
    them."""
    ptr, u32, u64, size = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
    buf, i = ctypes.c_char_p, ctypes.c_int
    for name, args, res in (
            ("cdp_table_new", [ctypes.POINTER(_KeyField), u32], ptr),
            ("cdp_table_free", [ptr], None), ("cdp_table_clear", [ptr], None),
            ("cdp_table_key_size", [ptr], size), ("cdp_table_entries", [ptr], u32),
            ("cdp_table_insert", [ptr, u32, u32, ctypes.POINTER(_FieldMatch), u64], i),
            ("cdp_table_remove", [ptr, u32], i), ("cdp_table_set_value", [ptr, u32, u64], i),
            ("cdp_table_lookup", [ptr, buf, ctypes.POINTER(u64), ctypes.POINTER(u32)], i),
            ("cdp_selector_new", [], ptr), ("cdp_selector_free", [ptr], None),
            ("cdp_selector_set_group", [ptr, u32, ctypes.POINTER(_Member), u32], i),
            ("cdp_selector_remove_group", [ptr, u32], i), ("cdp_selector_clear", [ptr], None),
            ("cdp_selector_choose", [ptr, u32, u64, ctypes.POINTER(u64), u32], ctypes.c_int64),
            ("cdp_crc16", [buf, size], ctypes.c_uint16), ("cdp_crc32", [buf, size], u32),
            ("cdp_csum16", [buf, size], ctypes.c_uint16),
            ("cdp_xor16", [buf, size], ctypes.c_uint16), ("cdp_identity", [buf, size], u64),
            ("cdp_pack_fields", [buf, ctypes.POINTER(u64), ctypes.POINTER(ctypes.c_uint8), size],
             size)):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


def _check(code: int) -> None:
    if code:
        error, message = _ERRORS[code]
        raise error(message)


class CTable:
    """A C match table with the key fields of a runtime Table (its `match_fields`). Entries come
    from the runtime, canonical and with their handles; each carries a caller's value."""

    def __init__(self, fields: Sequence[MatchField], lib: ctypes.CDLL | None = None) -> None:
        self._lib = lib or library()
        self.fields = list(fields)
        self._sizes = [(f.bitwidth + 7) // 8 for f in self.fields]
        spec = (_KeyField * len(self.fields))(
            *[_KeyField(f.bitwidth, _KINDS[f.match_kind]) for f in self.fields])
        self._table = self._lib.cdp_table_new(spec, len(self.fields))
        if not self._table:
            raise ValueError(f"cdp_table_new refused the key fields {self.fields}")
        self._free = weakref.finalize(self, self._lib.cdp_table_free, self._table)
        self.key_size: int = self._lib.cdp_table_key_size(self._table)
        self._value, self._handle = ctypes.c_uint64(), ctypes.c_uint32()

    def close(self) -> None:
        self._free()

    def __len__(self) -> int:
        return int(self._lib.cdp_table_entries(self._table))

    def insert(self, entry: Entry, value: int) -> None:
        """Add a runtime entry (its keys, priority and handle) with `value`; KeyError if its
        handle index or its match and priority are in the table already."""
        match = (_FieldMatch * len(self.fields))()
        for m, fm, size in zip(match, entry.keys, self._sizes, strict=True):
            if fm is None:
                continue  # don't care: value NULL
            first = fm.low if fm.kind == "range" else fm.value
            assert first is not None  # a canonical match has it
            m.value = first.to_bytes(size, "big")
            if fm.mask is not None:
                m.mask = fm.mask.to_bytes(size, "big")
            if fm.high is not None:
                m.high = fm.high.to_bytes(size, "big")
            m.prefix_len = fm.prefix_len or 0
        _check(self._lib.cdp_table_insert(self._table, entry.handle, entry.priority, match,
                                          value))

    def remove(self, handle: int) -> None:
        _check(self._lib.cdp_table_remove(self._table, handle))

    def set_value(self, handle: int, value: int) -> None:
        _check(self._lib.cdp_table_set_value(self._table, handle, value))

    def clear(self) -> None:
        self._lib.cdp_table_clear(self._table)

    def key_bytes(self, key: Sequence[int]) -> bytes:
        """The C key of the key values `Table.lookup` takes (one per field, in key order)."""
        return b"".join(v.to_bytes(size, "big") for v, size in zip(key, self._sizes, strict=True))

    def lookup(self, key: Sequence[int]) -> tuple[int, int] | None:
        """(value, handle) of the entry that wins for these key values; None on a miss."""
        return self.lookup_bytes(self.key_bytes(key))

    def lookup_bytes(self, key: bytes) -> tuple[int, int] | None:
        if len(key) != self.key_size:
            raise ValueError(f"a key of {len(key)} bytes, the table's have {self.key_size}")
        if not self._lib.cdp_table_lookup(self._table, key, ctypes.byref(self._value),
                                          ctypes.byref(self._handle)):
            return None
        return self._value.value, self._handle.value


class PortStates:
    """The port-up bitmap the selector reads: port p is up if p < nports and its bit is set."""

    def __init__(self, up: Iterable[int] = (), nports: int = MAX_PORTS) -> None:
        self.nports = nports
        self.words = (ctypes.c_uint64 * ((nports + 63) // 64))()
        for port in up:
            self.set(port, True)

    def set(self, port: int, up: bool) -> None:
        if not 0 <= port < self.nports:
            raise ValueError(f"port {port} is outside the bitmap's {self.nports} ports")
        bit = 1 << (port % 64)
        word = self.words[port // 64]
        self.words[port // 64] = word | bit if up else word & ~bit


class CSelector:
    """An action selector's groups in C, by BMv2 group handle (`ActionProfile.group_handle`);
    `choose` gives the member handle `ActionProfile.select` takes the action of."""

    def __init__(self, lib: ctypes.CDLL | None = None) -> None:
        self._lib = lib or library()
        self._selector = self._lib.cdp_selector_new()
        if not self._selector:
            raise MemoryError("cdp_selector_new")
        self._free = weakref.finalize(self, self._lib.cdp_selector_free, self._selector)

    def close(self) -> None:
        self._free()

    def set_group(self, group_handle: int, slots: Sequence[tuple[int, int | None]]) -> None:
        """Create or replace a group: its (member handle, watch port or None) slots, as
        `Group.slots`."""
        if any(watch is not None and watch < 0 for _, watch in slots):
            raise ValueError(f"negative watch port in {slots}")
        members = (_Member * len(slots))(
            *[_Member(handle, -1 if watch is None else watch) for handle, watch in slots])
        if self._lib.cdp_selector_set_group(self._selector, group_handle, members, len(slots)):
            raise MemoryError(f"cdp_selector_set_group({group_handle})")

    def remove_group(self, group_handle: int) -> None:
        if self._lib.cdp_selector_remove_group(self._selector, group_handle):
            raise KeyError(group_handle)

    def clear(self) -> None:
        self._lib.cdp_selector_clear(self._selector)

    def choose(self, group_handle: int, hash_value: int, ports: PortStates) -> int | None:
        """The chosen member handle; None when no member is live."""
        handle = self._lib.cdp_selector_choose(self._selector, group_handle,
                                               hash_value & 0xFFFFFFFFFFFFFFFF, ports.words,
                                               ports.nports)
        if handle == _SELECT_NO_GROUP:
            raise KeyError(group_handle)
        return None if handle == _SELECT_NONE else int(handle)


class CHashing:
    """c/hashing.c: the algorithms of hashing.ALGORITHMS and `pack_fields` (widths <= 64)."""

    def __init__(self) -> None:
        lib = self._lib = library()
        self.algorithms: dict[str, Callable[[bytes], int]] = {
            name: self._bound(getattr(lib, f"cdp_{name}")) for name in ALGORITHMS}

    @staticmethod
    def _bound(fn: Callable[[bytes, int], int]) -> Callable[[bytes], int]:
        return lambda data: int(fn(data, len(data)))

    def hash(self, algorithm: str, data: bytes) -> int:
        return self.algorithms[algorithm](data)

    def pack_fields(self, fields: Sequence[tuple[int, int]]) -> bytes:
        """hashing.pack_fields: (value, width) fields bit by bit, MSB first, zero-padded."""
        if any(not 0 <= width <= 64 for _, width in fields):
            raise ValueError(f"field widths must be 0 to 64 bits: {fields}")
        n = len(fields)
        values = (ctypes.c_uint64 * n)(*[v & 0xFFFFFFFFFFFFFFFF for v, _ in fields])
        widths = (ctypes.c_uint8 * n)(*[w for _, w in fields])
        out = ctypes.create_string_buffer((sum(w for _, w in fields) + 7) // 8 or 1)
        size = self._lib.cdp_pack_fields(out, values, widths, n)
        return out.raw[:size]
