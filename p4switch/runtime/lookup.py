"""Match indexes behind `Table.lookup`, one per table shape.

- ExactIndex: every field exact -> one dict on the key tuple.
- LpmIndex: one lpm field, the others exact -> a dict per prefix length in use, longest first.
- PriorityIndex: anything else (ternary, range, optional, several lpm fields): entries grouped by
  their mask tuple ("tuple space search"); each group is a dict from masked key to the entries
  with that masked key, best first; groups are visited in order of their best priority and the
  search stops once no remaining group can beat the best match found. Range fields are masked
  out of the group key and checked per entry.

Among matching entries the highest priority wins; on equal priority the lowest entry index
(BMv2's internal handle) wins, as BMv2's ternary lookup does.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import and_

from p4switch.cpmodel import FieldMatch, MatchField
from p4switch.runtime.entries import Entry


def _order(entry: Entry) -> tuple[int, int]:
    return (-entry.priority, entry.handle & 0xFFFFFF)


def _exact_key(entry: Entry) -> tuple[int, ...]:
    """An exact table's key: every field given, with its value."""
    values = []
    for fm in entry.keys:
        assert fm is not None and fm.value is not None
        values.append(fm.value)
    return tuple(values)


class ExactIndex:
    def __init__(self, fields: list[MatchField]) -> None:
        self._map: dict[tuple[int, ...], Entry] = {}
        # the per-packet lookup is the dict's own get: no Python frame (the map is only ever
        # changed in place)
        self.lookup: Callable[[tuple[int, ...]], Entry | None] = self._map.get

    def add(self, entry: Entry) -> None:
        self._map[_exact_key(entry)] = entry

    def remove(self, entry: Entry) -> None:
        del self._map[_exact_key(entry)]

    def clear(self) -> None:
        self._map.clear()


class LpmIndex:
    def __init__(self, fields: list[MatchField]) -> None:
        self._pos = next(i for i, f in enumerate(fields) if f.match_kind == "lpm")
        self._width = fields[self._pos].bitwidth
        self._single = len(fields) == 1
        self._by_len: dict[int, dict] = {}
        self._levels: list[tuple[int, dict]] = []  # (mask, map), longest prefix first

    def _mask(self, plen: int) -> int:
        return ((1 << plen) - 1) << (self._width - plen)

    def _split(self, entry: Entry) -> tuple[int, object]:
        fm = entry.keys[self._pos]
        plen, value = (0, 0) if fm is None else (fm.prefix_len, fm.value)
        assert plen is not None  # an lpm field has its prefix length
        if self._single:
            return plen, value
        values = [f.value if f is not None else 0 for f in entry.keys]
        values[self._pos] = value
        return plen, tuple(values)

    def _rebuild(self) -> None:
        self._levels = [(self._mask(p), m) for p, m in sorted(self._by_len.items(), reverse=True)
                        if m]

    def add(self, entry: Entry) -> None:
        plen, k = self._split(entry)
        level = self._by_len.setdefault(plen, {})
        fresh = not level
        level[k] = entry
        if fresh:
            self._rebuild()

    def remove(self, entry: Entry) -> None:
        plen, k = self._split(entry)
        level = self._by_len[plen]
        del level[k]
        if not level:
            del self._by_len[plen]
            self._rebuild()

    def clear(self) -> None:
        self._by_len.clear()
        self._levels = []

    def lookup(self, key: tuple[int, ...]) -> Entry | None:
        if self._single:
            v = key[0]
            for mask, level in self._levels:
                e = level.get(v & mask)
                if e is not None:
                    return e
            return None
        pos = self._pos
        head, v, tail = key[:pos], key[pos], key[pos + 1:]
        for mask, level in self._levels:
            e = level.get((*head, v & mask, *tail))
            if e is not None:
                return e
        return None


def _field_mask(mf: MatchField, fm: FieldMatch | None) -> int:
    full = (1 << mf.bitwidth) - 1
    if fm is None or mf.match_kind == "range":
        return 0
    if mf.match_kind in ("exact", "optional"):
        return full
    if mf.match_kind == "lpm":
        assert fm.prefix_len is not None
        return full ^ ((1 << (mf.bitwidth - fm.prefix_len)) - 1)
    assert fm.mask is not None  # ternary
    return fm.mask


class _Group:
    __slots__ = ("best", "map", "masks")

    def __init__(self, masks: tuple[int, ...]) -> None:
        self.masks = masks
        # masked key -> [(order, entry, ranges)], best first; ranges = ((pos, low, high), ...)
        self.map: dict[tuple[int, ...], list[tuple[tuple[int, int], Entry, tuple]]] = {}
        self.best = 0  # highest priority in the group


class PriorityIndex:
    def __init__(self, fields: list[MatchField]) -> None:
        self._fields = fields
        self._groups: dict[tuple[int, ...], _Group] = {}
        self._ordered: list[_Group] = []

    def _place(self, entry: Entry) -> tuple[tuple[int, ...], tuple[int, ...], tuple]:
        masks = tuple(_field_mask(mf, fm) for mf, fm in zip(self._fields, entry.keys, strict=False))
        values = tuple(0 if fm is None or fm.value is None else fm.value for fm in entry.keys)
        masked = tuple(map(and_, values, masks))
        ranges = tuple((i, fm.low, fm.high) for i, fm in enumerate(entry.keys)
                       if fm is not None and fm.kind == "range")
        return masks, masked, ranges

    def _reorder(self) -> None:
        self._ordered = sorted(self._groups.values(), key=lambda g: -g.best)

    def add(self, entry: Entry) -> None:
        masks, masked, ranges = self._place(entry)
        group = self._groups.get(masks)
        if group is None:
            group = self._groups[masks] = _Group(masks)
        # copy-on-write, so that a concurrent lookup always sees a complete, sorted bucket
        bucket = [*group.map.get(masked, ()), (_order(entry), entry, ranges)]
        bucket.sort(key=lambda item: item[0])
        group.map[masked] = bucket
        if entry.priority > group.best:
            group.best = entry.priority
        self._reorder()

    def remove(self, entry: Entry) -> None:
        masks, masked, _ = self._place(entry)
        group = self._groups[masks]
        bucket = [item for item in group.map[masked] if item[1] is not entry]
        if bucket:
            group.map[masked] = bucket
        else:
            del group.map[masked]
        if not group.map:
            del self._groups[masks]
        else:
            group.best = max(item[1].priority for b in group.map.values() for item in b)
        self._reorder()

    def clear(self) -> None:
        self._groups.clear()
        self._ordered = []

    def lookup(self, key: tuple[int, ...]) -> Entry | None:
        best: Entry | None = None
        best_order = (0, 0)
        for group in self._ordered:
            if best is not None and group.best < best.priority:
                break
            bucket = group.map.get(tuple(map(and_, key, group.masks)))
            if not bucket:
                continue
            for order, entry, ranges in bucket:
                if best is not None and order > best_order:
                    break
                if ranges and not all(lo <= key[i] <= hi for i, lo, hi in ranges):
                    continue
                best, best_order = entry, order
                break
        return best


def make_index(fields: list[MatchField]):
    kinds = [f.match_kind for f in fields]
    if all(k == "exact" for k in kinds):
        return ExactIndex(fields)
    if kinds.count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
        return LpmIndex(fields)
    return PriorityIndex(fields)
