"""Table entries and their validation as PI (`proto/frontend/src/device_mgr.cpp`) does it.

An entry's identity is its match key plus its priority. Keys are `cpmodel.FieldMatch` values,
one per match field in key order (selector fields excluded); None stands for a field left out
(don't care), which only lpm, ternary, range and optional fields may be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from p4switch.cpmodel import Action, ActionCall, FieldMatch, MatchField
from p4switch.runtime.errors import invalid

if TYPE_CHECKING:
    from p4switch.runtime.meters import MeterCell, MeterConfig

INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class MemberRef:
    """An indirect table entry's action: an action profile member."""

    member_id: int


@dataclass(frozen=True)
class GroupRef:
    """An indirect table entry's action: an action selector group."""

    group_id: int


@dataclass(frozen=True)
class OneShotAction:
    action: ActionCall
    weight: int = 1
    watch_port: int | None = None


@dataclass(frozen=True)
class OneShot:
    """One-shot selector programming: the actions of a group created for this entry only.

    `group_id` is set by the table when the entry is written (a hidden, negative id) and is what
    `ActionProfile.select` uses.
    """

    actions: tuple[OneShotAction, ...]
    group_id: int | None = field(default=None, compare=False)


TableAction = ActionCall | MemberRef | GroupRef | OneShot


@dataclass(eq=False)
class Entry:
    """A table entry. Writers fill keys, priority, action (and optionally meter_config,
    controller data); the table canonicalizes the keys, binds the action and sets handle,
    is_const and meter. The data plane updates direct_counter and runs meter."""

    keys: tuple[FieldMatch | None, ...]
    priority: int = 0
    action: TableAction | None = None
    direct_counter: list[int] = field(default_factory=lambda: [0, 0])  # [packets, bytes]
    meter_config: MeterConfig | None = None  # direct meter configuration; None = unconfigured
    meter: MeterCell | None = None  # the direct meter's state, set by the table
    handle: int = -1  # BMv2 entry handle (version << 24 | index), set on insert
    is_const: bool = False
    controller_metadata: int = 0
    metadata: bytes = b""
    idle_timeout_ns: int = 0

    @property
    def identity(self) -> tuple:
        return (self.keys, self.priority)


def check_value(value: int | None, width: int, what: str) -> int:
    if value is None:
        raise invalid(f"{what}: value missing")
    if not isinstance(value, int) or value < 0:
        raise invalid(f"{what}: {value!r} is not a non-negative integer")
    if value >> width:
        raise invalid(f"{what}: value {value:#x} does not fit in {width} bits")
    return value


def normalize_match(mf: MatchField, fm: FieldMatch | None) -> FieldMatch | None:
    """Validate one field of a match key; returns its canonical form (None for don't care)."""
    w = mf.bitwidth
    kind = mf.match_kind
    name = f"match field {mf.name!r}"
    if fm is None:
        if kind == "exact":
            raise invalid(f"missing exact {name} in match key")
        return None
    if not isinstance(fm, FieldMatch):
        raise invalid(f"{name}: {fm!r} is not a field match")
    if fm.kind != kind:
        raise invalid(f"invalid match type for {name}: {fm.kind}, the table has {kind}")
    if kind in ("exact", "optional"):
        return FieldMatch(kind, value=check_value(fm.value, w, name))
    if kind == "lpm":
        value = check_value(fm.value, w, name)
        plen = fm.prefix_len
        if not isinstance(plen, int) or plen < 0:
            raise invalid(f"{name}: prefix length cannot be < 0 (got {plen})")
        if plen > w:
            raise invalid(f"{name}: prefix length {plen} > bitwidth {w}")
        if plen == 0:
            raise invalid(f"{name}: invalid representation of a don't-care LPM match, "
                          "omit the field instead of using a prefix length of 0")
        if value & ((1 << (w - plen)) - 1):
            raise invalid(f"{name}: invalid LPM value {value:#x}/{plen}, "
                          "bits past the prefix length must be zero")
        return FieldMatch(kind, value=value, prefix_len=plen)
    if kind == "ternary":
        value = check_value(fm.value, w, name)
        mask = check_value(fm.mask, w, name + " mask")
        if mask == 0:
            raise invalid(f"{name}: invalid representation of a don't-care ternary match, "
                          "omit the field instead of using a 0 mask")
        if value & mask != value:
            raise invalid(f"{name}: invalid ternary value {value:#x}&&&{mask:#x}, "
                          "value & mask must equal value")
        return FieldMatch(kind, value=value, mask=mask)
    if kind == "range":
        low = check_value(fm.low, w, name + " low")
        high = check_value(fm.high, w, name + " high")
        if low == 0 and high == (1 << w) - 1:
            raise invalid(f"{name}: invalid representation of a don't-care range match, "
                          "omit the field instead of using the full range")
        if low > high:
            raise invalid(f"{name}: invalid range {low}->{high}, low must be <= high")
        return FieldMatch(kind, low=low, high=high)
    raise invalid(f"{name}: unsupported match kind {kind}")


def normalize_key(fields: list[MatchField], keys, priority: int,
                  needs_priority: bool) -> tuple[FieldMatch | None, ...]:
    keys = tuple(keys)
    if len(keys) > len(fields):
        raise invalid(f"too many fields in match key: {len(keys)}, the table has {len(fields)}")
    if len(keys) < len(fields):
        keys = keys + (None,) * (len(fields) - len(keys))
    out = tuple(normalize_match(mf, fm) for mf, fm in zip(fields, keys, strict=False))
    check_priority(priority, needs_priority)
    return out


def check_priority(priority: int, needs_priority: bool) -> None:
    if not isinstance(priority, int) or priority < 0 or priority > INT32_MAX:
        raise invalid(f"invalid priority {priority!r}")
    if not needs_priority and priority > 0:
        raise invalid(f"non-zero priority {priority} for a table without "
                      "ternary, range or optional match fields")
    if needs_priority and priority == 0:
        raise invalid("zero priority for a table with ternary, range or optional match fields "
                      "(priority must be > 0)")


def check_action_args(action: Action, call: ActionCall) -> ActionCall:
    args = tuple(call.args)
    if len(args) != len(action.params):
        raise invalid(f"action {action.name} takes {len(action.params)} parameter(s), "
                      f"got {len(args)}")
    for param, value in zip(action.params, args, strict=False):
        check_value(value, param.bitwidth, f"action {action.name} parameter {param.name!r}")
    return ActionCall(call.action, args)
