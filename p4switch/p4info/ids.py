"""P4Runtime ids and aliases, assigned the way p4c assigns them.

- id = (kind prefix << 24) | (Jenkins one-at-a-time hash of the fully qualified name & 0xFFFFFF);
  on a collision the hash input value is incremented until the id is free. Names without an
  `@id` are processed per kind, kinds in prefix order, names in byte-wise (strcmp) order, after
  every `@id` has been reserved. An `@id(N)` without a prefix gets the kind's prefix.
- alias = the shortest dot-separated suffix of the name that is unique among all the
  control-plane names of the program, all kinds together.
"""

from __future__ import annotations

from collections.abc import Iterable

# p4.config.v1.P4Ids.Prefix values.
ACTION = 0x01
TABLE = 0x02
VALUE_SET = 0x03
CONTROLLER_HEADER = 0x04
ACTION_PROFILE = 0x11
COUNTER = 0x12
DIRECT_COUNTER = 0x13
METER = 0x14
DIRECT_METER = 0x15
REGISTER = 0x16
DIGEST = 0x17

_MASK32 = 0xFFFFFFFF


class P4InfoIdError(ValueError):
    """An `@id` annotation that p4c would reject."""


def jenkins_one_at_a_time(data: bytes) -> int:
    """32-bit Jenkins one-at-a-time hash."""
    h = 0
    for c in data:
        h = (h + c) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


class SymbolIds:
    """Collects (kind, name, explicit id) symbols, then assigns every id at once."""

    def __init__(self) -> None:
        self._symbols: dict[int, dict[str, int | None]] = {}
        self._ids: dict[tuple[int, str], int] = {}
        self._suffixes = SuffixSet()

    def add(self, kind: int, name: str, explicit_id: int | None = None) -> None:
        """Register a symbol; a name already registered for this kind is ignored (as in p4c)."""
        table = self._symbols.setdefault(kind, {})
        if name in table:
            return
        table[name] = explicit_id
        self._suffixes.add(name)

    def assign(self) -> None:
        """Compute the ids of every symbol added so far."""
        assigned: set[int] = set()
        for kind in sorted(self._symbols):
            for name, explicit in self._symbols[kind].items():
                if explicit is None:
                    continue
                prefix_bits = explicit & 0xFF000000
                if prefix_bits and prefix_bits != kind << 24:
                    raise P4InfoIdError(f"{name}: @id has the wrong 8-bit prefix")
                full = explicit | kind << 24
                if full in assigned:
                    raise P4InfoIdError(f"@id {explicit} is assigned to multiple declarations")
                assigned.add(full)
                self._ids[kind, name] = full
        for kind in sorted(self._symbols):
            names = [n for n, e in self._symbols[kind].items() if e is None]
            for name in sorted(names, key=lambda n: n.encode()):
                value = jenkins_one_at_a_time(name.encode())
                while (kind << 24 | value & 0xFFFFFF) in assigned:
                    value = (value + 1) & _MASK32
                full = kind << 24 | value & 0xFFFFFF
                assigned.add(full)
                self._ids[kind, name] = full

    def id(self, kind: int, name: str) -> int:
        try:
            return self._ids[kind, name]
        except KeyError:
            raise KeyError(f"no P4Runtime id for {name!r} (kind 0x{kind:02x})") from None

    def alias(self, name: str) -> str:
        return self._suffixes.shortest_unique_suffix(name)


class SuffixSet:
    """The set of names, as a tree of dot-components read right to left, counting names per node."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._root: dict[str, list] = {}  # component -> [count, children]
        self._names: set[str] = set()
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        if name in self._names:
            return
        self._names.add(name)
        children = self._root
        for component in reversed(name.split(".")):
            node = children.setdefault(component, [0, {}])
            node[0] += 1
            children = node[1]

    def shortest_unique_suffix(self, name: str) -> str:
        components = name.split(".")
        children = self._root
        needed = 0
        for component in reversed(components):
            node = children.get(component)
            if node is None:
                raise KeyError(f"{name!r} is not in the set of names")
            needed += 1
            if node[0] < 2:
                break
            children = node[1]
        return ".".join(components[len(components) - needed :])
