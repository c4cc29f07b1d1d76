"""Match-action tables: entries, default entry, PI's validation and the lookup hot path."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from p4switch import cpmodel
from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.runtime.entries import (
    Entry,
    GroupRef,
    MemberRef,
    OneShot,
    check_action_args,
    normalize_key,
)
from p4switch.runtime.errors import already_exists, denied, exhausted, invalid, not_found
from p4switch.runtime.handles import HandleAllocator
from p4switch.runtime.lookup import make_index
from p4switch.runtime.meters import MeterCell, MeterConfig

if TYPE_CHECKING:
    from p4switch.runtime.action_profiles import ActionProfile

PRIORITY_KINDS = ("ternary", "range", "optional")


class Table:
    """One table's entries. `lookup(key)` is what the data plane calls per packet."""

    def __init__(self, model: cpmodel.Table, actions: dict[str, cpmodel.Action],
                 profile: ActionProfile | None = None, meter_unit: str | None = None) -> None:
        self.name = model.name
        self.model = model
        self.match_fields = [f for f in model.match_fields if f.match_kind != "selector"]
        self.needs_priority = any(f.match_kind in PRIORITY_KINDS for f in self.match_fields)
        self.profile = profile
        self.is_indirect = model.implementation is not None
        self.meter_unit = meter_unit if model.direct_meter else None
        self._actions = actions
        self._scopes = {ref.name: ref.scope for ref in model.action_refs}
        self._entries: dict[tuple, Entry] = {}
        self._index = make_index(self.match_fields)
        self._handles = HandleAllocator()
        self._versions: dict[int, int] = {}
        self._by_handle: dict[int, Entry] = {}
        self.default_entry = Entry(keys=(), action=self.initial_default())
        # the hot path, the index's own (no call layer): the matching entry for key values in
        # match-field order, or None on a miss
        self.lookup: Callable[[tuple[int, ...]], Entry | None] = self._index.lookup

    @property
    def action_names(self) -> list[str]:
        """The table's actions, in declaration order."""
        return list(self._scopes)

    # ---- entries -----------------------------------------------------------------------------

    def insert(self, entry: Entry) -> None:
        """Add an entry after PI's checks (key, priority, action, direct resources, duplicate,
        capacity); the entry object itself is stored."""
        self._check_writable()
        self._add(entry)

    def modify(self, entry: Entry) -> None:
        """Replace an existing entry's action (and meter config when given); counters stay."""
        self._check_writable()
        keys = normalize_key(self.match_fields, entry.keys, entry.priority, self.needs_priority)
        action = self._check_entry_action(entry.action)
        self._check_meter_config(entry.meter_config)
        self._check_ttl(entry)
        current = self._entries.get((keys, entry.priority))
        if current is None:
            raise not_found(f"table {self.name}: no entry with this match key")
        self._replace_action(current, action)
        if entry.meter_config is not None:
            assert self.meter_unit is not None  # _check_meter_config refused a config otherwise
            current.meter_config = entry.meter_config
            current.meter = MeterCell(self.meter_unit, entry.meter_config)
        current.controller_metadata = entry.controller_metadata
        current.metadata = entry.metadata
        current.idle_timeout_ns = entry.idle_timeout_ns

    def delete(self, keys: Iterable[FieldMatch | None], priority: int = 0) -> None:
        """Remove the entry with this match key and priority (NOT_FOUND if none)."""
        self._check_writable()
        entry = self.get(keys, priority)
        self._remove(entry)

    def get(self, keys: Iterable[FieldMatch | None], priority: int = 0) -> Entry:
        """The stored entry with this match key and priority (NOT_FOUND if none)."""
        keys = normalize_key(self.match_fields, keys, priority, self.needs_priority)
        entry = self._entries.get((keys, priority))
        if entry is None:
            raise not_found(f"table {self.name}: no entry with this match key")
        return entry

    def entries(self) -> list[Entry]:
        """All entries, in BMv2 handle order."""
        return sorted(self._entries.values(), key=lambda e: e.handle & 0xFFFFFF)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Delete every non-const entry (const tables keep theirs). As BMv2's `table_clear`,
        this restarts entry handles at 0."""
        for entry in list(self._entries.values()):
            if not entry.is_const:
                self._remove(entry)
        if not self._entries:
            self._handles.clear()
            self._versions.clear()

    # ---- BMv2 handles (runtime CLI) ----------------------------------------------------------

    def by_handle(self, handle: int) -> Entry:
        entry = self._by_handle.get(handle & 0xFFFFFF)
        if entry is None or entry.handle != handle:
            raise not_found(f"table {self.name}: invalid entry handle {handle}")
        return entry

    def modify_by_handle(self, handle: int, action) -> None:
        self._check_writable()
        entry = self.by_handle(handle)
        self._replace_action(entry, self._check_entry_action(action))

    def delete_by_handle(self, handle: int) -> None:
        self._check_writable()
        self._remove(self.by_handle(handle))

    # ---- default entry -----------------------------------------------------------------------

    def initial_default(self) -> ActionCall:
        return self.model.default_action or ActionCall("NoAction")

    def set_default(self, action: ActionCall) -> None:
        if self.is_indirect:
            raise invalid(f"cannot set the default action of indirect table {self.name}")
        if self.model.const_default_action:
            raise denied(f"table {self.name} has a const default action")
        if not isinstance(action, ActionCall):
            raise invalid(f"table {self.name}: the default action must be a direct action")
        call = self._check_action(action, default=True)
        self.default_entry.action = call

    def reset_default(self) -> None:
        if self.is_indirect:
            raise invalid(f"cannot reset the default action of indirect table {self.name}")
        if self.model.const_default_action:
            raise denied(f"table {self.name} has a const default action")
        self.default_entry.action = self.initial_default()

    # ---- direct resources --------------------------------------------------------------------

    def set_meter_config(self, entry: Entry, config: MeterConfig | None) -> None:
        """Configure an entry's direct meter (None = unconfigured: every packet GREEN)."""
        if self.meter_unit is None:
            raise invalid(f"table {self.name} has no direct meter")
        self._check_meter_config(config)
        entry.meter_config = config
        entry.meter = MeterCell(self.meter_unit, config)

    # ---- internals ---------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self.model.is_const:
            raise denied(f"table {self.name} has const entries and cannot be written")

    def _check_meter_config(self, config: MeterConfig | None) -> None:
        if config is not None:
            if self.meter_unit is None:
                raise invalid(f"table {self.name} has no direct meter")
            config.validate()

    def _check_action(self, call: ActionCall, default: bool) -> ActionCall:
        if call.action not in self._actions:
            raise invalid(f"unknown action {call.action!r}")
        scope = self._scopes.get(call.action)
        if scope is None:
            raise invalid(f"action {call.action} is not an action of table {self.name}")
        if default and scope == "TABLE_ONLY":
            raise denied(f"cannot use @tableonly action {call.action} as the default action "
                         f"of table {self.name}")
        if not default and scope == "DEFAULT_ONLY":
            raise denied(f"cannot use @defaultonly action {call.action} in an entry "
                         f"of table {self.name}")
        return check_action_args(self._actions[call.action], call)

    def _check_entry_action(self, action):
        if action is None:
            raise invalid(f"table {self.name}: the entry's action must be set")
        if self.is_indirect:
            if isinstance(action, ActionCall):
                raise invalid(f"cannot give a direct action to indirect table {self.name}")
            if not isinstance(action, (MemberRef, GroupRef, OneShot)):
                raise invalid(f"invalid table action {action!r}")
            if isinstance(action, OneShot):
                self.profile.check_oneshot(action)
            else:
                self.profile.check_ref(action)
            return action
        if not isinstance(action, ActionCall):
            raise invalid(f"cannot give an action profile member/group to direct table "
                          f"{self.name}")
        return self._check_action(action, default=False)

    def _check_ttl(self, entry: Entry) -> None:
        if entry.idle_timeout_ns and not self.model.idle_timeout:
            raise invalid(f"table {self.name} does not support idle timeouts")
        if entry.idle_timeout_ns < 0:
            raise invalid("idle_timeout_ns cannot be negative")

    def _add(self, entry: Entry, const: bool = False) -> None:
        keys = normalize_key(self.match_fields, entry.keys, entry.priority, self.needs_priority)
        action = self._check_entry_action(entry.action)
        self._check_ttl(entry)
        config = entry.meter_config
        self._check_meter_config(config)
        ident = (keys, entry.priority)
        if ident in self._entries:
            raise already_exists(f"table {self.name}: an entry with this match key exists, "
                                 "use MODIFY to change its action")
        if len(self._entries) >= self.model.size and not const:
            raise exhausted(f"table {self.name} is full ({self.model.size} entries)")
        entry.keys = keys
        entry.is_const = const
        entry.action = self._bind_action(action)
        if self.meter_unit is not None:
            entry.meter = MeterCell(self.meter_unit, config)
        index = self._handles.get()
        entry.handle = (self._versions.get(index, 0) << 24) | index
        self._entries[ident] = entry
        self._by_handle[index] = entry
        self._index.add(entry)

    def _bind_action(self, action):
        if isinstance(action, OneShot):
            return self.profile.create_oneshot(action)
        if isinstance(action, (MemberRef, GroupRef)):
            self.profile.add_ref(action)
        return action

    def _unbind_action(self, action) -> None:
        if not isinstance(action, (OneShot, MemberRef, GroupRef)):
            return
        assert self.profile is not None  # only an indirect table's entries have these
        if isinstance(action, OneShot):
            self.profile.delete_oneshot(action)
        else:
            self.profile.remove_ref(action)

    def _replace_action(self, entry: Entry, action) -> None:
        new = self._bind_action(action)
        self._unbind_action(entry.action)
        entry.action = new

    def _remove(self, entry: Entry) -> None:
        self._index.remove(entry)
        del self._entries[entry.identity]
        index = entry.handle & 0xFFFFFF
        del self._by_handle[index]
        self._versions[index] = ((entry.handle >> 24) + 1) & 0xFF
        self._handles.release(index)
        self._unbind_action(entry.action)

    def install_const(self, entries: list[cpmodel.ConstEntry]) -> None:
        """Install the program's `const entries` (first listed = highest priority)."""
        n = len(entries)
        for i, ce in enumerate(entries):
            priority = ce.priority if ce.priority is not None else (
                n - i if self.needs_priority else 0)
            keys = tuple(_dont_care(mf, fm) for mf, fm in zip(self.match_fields, ce.keys,
                                                                strict=False))
            entry = Entry(keys=keys, priority=priority, action=ce.action)
            self._add(entry, const=True)

    def reset(self) -> None:
        """Back to the program's initial state: no entries but const ones, initial default."""
        for entry in list(self._entries.values()):
            self._remove(entry)
        self._handles.clear()
        self._versions.clear()
        self._index.clear()
        self.default_entry = Entry(keys=(), action=self.initial_default())
        if self.model.const_entries:
            self.install_const(self.model.const_entries)


def _dont_care(mf: cpmodel.MatchField, fm: FieldMatch | None) -> FieldMatch | None:
    """Const entries may spell "don't care" as a full range, a zero mask or prefix 0."""
    if fm is None:
        return None
    full = (1 << mf.bitwidth) - 1
    if fm.kind == "range" and fm.low == 0 and fm.high == full:
        return None
    if fm.kind == "ternary" and fm.mask == 0:
        return None
    if fm.kind == "lpm" and fm.prefix_len == 0:
        return None
    return fm
