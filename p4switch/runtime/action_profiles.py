"""Action profiles and selectors, with PI's weighted-member mapping and BMv2's member choice.

BMv2 selects the (H mod n)-th smallest *member handle* among a group's active members, H being
the selector hash truncated to 32 bits. PI maps a P4Runtime member to one BMv2 member handle and
a member of weight w in a group to w handles (the member's own plus w-1 copies, created in
member-id order when a group update needs them and freed when no group needs them any more).
Members whose watch port is down are inactive (skipped). One-shot programming creates a hidden
group (negative id here) whose members are fresh handles, one per unit of weight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from p4switch import cpmodel
from p4switch.cpmodel import ActionCall
from p4switch.runtime.entries import GroupRef, MemberRef, OneShot, check_action_args
from p4switch.runtime.errors import (
    RuntimeApiError,
    already_exists,
    exhausted,
    invalid,
    not_found,
    unimplemented,
)
from p4switch.runtime.handles import HandleAllocator
from p4switch.runtime.hashing import algorithm, pack_fields

GroupMember = tuple[int, int, "int | None"]  # (member_id, weight, watch_port)


@dataclass
class Member:
    member_id: int
    action: ActionCall
    handles: list[int]  # BMv2 member handles: [0] the member itself, [1:] weighted copies
    weight_counts: Counter = field(default_factory=lambda: Counter({1: 1}))
    refs: int = 0  # table entries pointing at it


@dataclass
class Group:
    group_id: int
    max_size: int = 0
    members: dict[int, tuple[int, int | None]] = field(default_factory=dict)  # id -> (w, watch)
    slots: list[tuple[int, int | None]] = field(default_factory=list)  # (handle, watch), sorted
    handle: int = -1  # BMv2 group handle
    handles: list[int] = field(default_factory=list)  # all handles, sorted
    watched: bool = False
    refs: int = 0

    def set_slots(self, slots: list[tuple[int, int | None]]) -> None:
        self.slots = sorted(slots)
        self.handles = [h for h, _ in self.slots]
        self.watched = any(w is not None for _, w in self.slots)


class ActionProfile:
    """An `action_profile` or `action_selector` instance."""

    def __init__(self, model: cpmodel.ActionProfile, actions: dict[str, cpmodel.Action],
                 allowed_actions: Sequence[str] | None = None,
                 port_up: Callable[[int], bool] = lambda port: True) -> None:
        self.name = model.name
        self.model = model
        self.with_selector = model.with_selector
        self.port_up = port_up
        self._actions = actions
        self._allowed = set(allowed_actions) if allowed_actions is not None else set(actions)
        self._hash = algorithm(model.selector_algorithm) if model.with_selector else None
        self.reset()

    def reset(self) -> None:
        self._members: dict[int, Member] = {}
        self._groups: dict[int, Group] = {}
        self._action_of: dict[int, ActionCall] = {}  # BMv2 member handle -> action
        self._handles = HandleAllocator()
        self._group_handles = HandleAllocator()
        self._mode: str | None = None  # "manual" or "oneshot" once used
        self._next_hidden = -1

    # ---- the hot path ------------------------------------------------------------------------

    def select(self, ref: MemberRef | GroupRef | OneShot, hash_value: int) -> ActionCall | None:
        """The action for an entry's member/group; None for a group with no active member
        (BMv2 then runs no action)."""
        if isinstance(ref, MemberRef):
            return self._members[ref.member_id].action
        assert ref.group_id is not None  # a OneShot's is set when its entry is written
        group = self._groups[ref.group_id]
        if group.watched:
            up = self.port_up
            handles = [h for h, w in group.slots if w is None or up(w)]
        else:
            handles = group.handles
        if not handles:
            return None
        return self._action_of[handles[(hash_value & 0xFFFFFFFF) % len(handles)]]

    def selector_hash(self, values_and_widths: Sequence[tuple[int, int]]) -> int:
        """H over the selector key fields (in key order, fields of invalid headers left out)."""
        if self._hash is None:
            raise ValueError(f"action profile {self.name} has no selector")
        return self._hash(pack_fields(values_and_widths)) & 0xFFFFFFFF

    # ---- members -----------------------------------------------------------------------------

    def insert_member(self, member_id: int, action: ActionCall) -> None:
        self._use_mode("manual")
        call = self._check_action(action)
        if member_id in self._members:
            raise already_exists(f"action profile {self.name}: duplicate member id {member_id}")
        handle = self._new_handle(call)
        self._members[member_id] = Member(member_id, call, [handle])

    def modify_member(self, member_id: int, action: ActionCall) -> None:
        self._use_mode("manual")
        call = self._check_action(action)
        member = self.member(member_id)
        member.action = call
        for handle in member.handles:
            self._action_of[handle] = call

    def delete_member(self, member_id: int) -> None:
        self._use_mode("manual")
        member = self.member(member_id)
        users = [g.group_id for g in self._groups.values() if member_id in g.members]
        if member.refs or users:
            raise RuntimeApiError(
                "FAILED_PRECONDITION",
                f"action profile {self.name}: member {member_id} is still used by "
                + (f"group(s) {users}" if users else f"{member.refs} table entr(y/ies)"))
        for handle in member.handles:
            self._free_handle(handle)
        del self._members[member_id]

    def member(self, member_id: int) -> Member:
        try:
            return self._members[member_id]
        except KeyError:
            raise not_found(f"action profile {self.name}: member id {member_id} "
                            "does not exist") from None

    def members(self) -> dict[int, Member]:
        return dict(self._members)

    # ---- groups ------------------------------------------------------------------------------

    def insert_group(self, group_id: int, members: Sequence[GroupMember] = (),
                     max_size: int = 0) -> None:
        self._use_mode("manual")
        self._check_selector()
        self._check_max_size(max_size)
        if group_id in self._groups:
            raise already_exists(f"action profile {self.name}: duplicate group id {group_id}")
        group = Group(group_id, max_size)
        self._update_members(group, members)
        group.handle = self._group_handles.get()
        self._groups[group_id] = group

    def modify_group(self, group_id: int, members: Sequence[GroupMember] = (),
                     max_size: int = 0) -> None:
        self._use_mode("manual")
        group = self.group(group_id)
        if max_size != 0 and max_size != group.max_size:
            raise invalid(f"action profile {self.name}: cannot change the max_size of group "
                          f"{group_id} after its creation")
        self._update_members(group, members)

    def delete_group(self, group_id: int) -> None:
        self._use_mode("manual")
        group = self.group(group_id)
        if group.refs:
            raise RuntimeApiError("FAILED_PRECONDITION",
                                  f"action profile {self.name}: group {group_id} is still "
                                  f"used by {group.refs} table entr(y/ies)")
        for member_id, (weight, _) in group.members.items():
            member = self._members[member_id]
            member.weight_counts[weight] -= 1
            self._purge(member)
        self._group_handles.release(group.handle)
        del self._groups[group_id]

    def group(self, group_id: int) -> Group:
        group = self._groups.get(group_id) if group_id >= 0 else None
        if group is None:
            raise not_found(f"action profile {self.name}: group id {group_id} does not exist")
        return group

    def member_by_handle(self, handle: int) -> Member:
        """The member owning a BMv2 member handle (the runtime CLI works with handles)."""
        for member in self._members.values():
            if handle in member.handles:
                return member
        raise not_found(f"action profile {self.name}: invalid member handle {handle}")

    def group_by_handle(self, handle: int) -> Group:
        for group in self._groups.values():
            if group.handle == handle and group.group_id >= 0:
                return group
        raise not_found(f"action profile {self.name}: invalid group handle {handle}")

    def action_of_handle(self, handle: int) -> ActionCall:
        return self._action_of[handle]

    def group_handle(self, group_id: int) -> int:
        """The BMv2 group handle of a group (hidden one-shot groups included)."""
        return self._groups[group_id].handle

    @property
    def action_names(self) -> list[str]:
        """Actions a member may run: those of the tables using the profile."""
        return sorted(self._allowed)

    def groups(self) -> dict[int, Group]:
        """The groups written by the controller (one-shot hidden groups excluded)."""
        return {gid: g for gid, g in self._groups.items() if gid >= 0}

    # ---- references from table entries -------------------------------------------------------

    def check_ref(self, ref: MemberRef | GroupRef) -> None:
        if self._mode == "oneshot" and not self._empty():
            raise invalid(f"action profile {self.name}: invalid attempt to mix action "
                          "selector programming modes")
        if isinstance(ref, MemberRef):
            ok = ref.member_id in self._members
        else:
            ok = self.with_selector and ref.group_id >= 0 and ref.group_id in self._groups
        if not ok:
            raise invalid(f"action profile {self.name}: invalid member / group id in {ref}")
        if isinstance(ref, GroupRef) and not self._groups[ref.group_id].members:
            # BMv2 refuses an entry pointing to an empty group (EMPTY_GRP); PI says UNKNOWN
            raise RuntimeApiError("UNKNOWN", f"action profile {self.name}: group "
                                  f"{ref.group_id} is empty (EMPTY_GRP)")

    def add_ref(self, ref: MemberRef | GroupRef) -> None:
        self._use_mode("manual")
        self._target(ref).refs += 1

    def remove_ref(self, ref: MemberRef | GroupRef) -> None:
        self._target(ref).refs -= 1

    def _target(self, ref: MemberRef | GroupRef) -> Member | Group:
        if isinstance(ref, MemberRef):
            return self._members[ref.member_id]
        return self._groups[ref.group_id]

    # ---- one-shot ----------------------------------------------------------------------------

    def check_oneshot(self, oneshot: OneShot) -> None:
        if self._mode == "manual" and not self._empty():
            raise invalid(f"action profile {self.name}: invalid attempt to mix action "
                          "selector programming modes")
        self._check_selector()
        if not oneshot.actions:
            raise unimplemented("no support for empty action profile groups")
        for item in oneshot.actions:
            self._check_action(item.action)
        if any(item.weight <= 0 for item in oneshot.actions):
            raise invalid("member weight must be a positive integer value")
        total = sum(item.weight for item in oneshot.actions)
        if self.model.max_group_size > 0 and total > self.model.max_group_size:
            raise exhausted(f"action profile {self.name}: sum of weights {total} exceeds "
                            f"max_group_size {self.model.max_group_size}")

    def create_oneshot(self, oneshot: OneShot) -> OneShot:
        self.check_oneshot(oneshot)
        self._use_mode("oneshot")
        slots = []
        for item in oneshot.actions:
            call = self._check_action(item.action)
            for _ in range(item.weight):
                slots.append((self._new_handle(call), item.watch_port))
        group_id = self._next_hidden
        self._next_hidden -= 1
        group = Group(group_id, handle=self._group_handles.get())
        group.set_slots(slots)
        self._groups[group_id] = group
        return OneShot(oneshot.actions, group_id=group_id)

    def delete_oneshot(self, oneshot: OneShot) -> None:
        assert oneshot.group_id is not None  # set when its entry was written
        group = self._groups.pop(oneshot.group_id)
        for handle in group.handles:
            self._free_handle(handle)
        self._group_handles.release(group.handle)

    # ---- internals ---------------------------------------------------------------------------

    def _empty(self) -> bool:
        return not self._members and not self._groups

    def _use_mode(self, mode: str) -> None:
        if self._mode != mode:
            if self._mode is not None and not self._empty():
                raise invalid(f"action profile {self.name}: invalid attempt to mix action "
                              "selector programming modes")
            self._mode = mode

    def _check_selector(self) -> None:
        if not self.with_selector:
            raise invalid(f"action profile {self.name} has no selector: groups are not "
                          "supported")

    def _check_max_size(self, max_size: int) -> None:
        if max_size < 0:
            raise invalid("group max_size cannot be less than 0")
        static = self.model.max_group_size
        if static > 0 and max_size > static:
            raise invalid(f"group max_size {max_size} exceeds the static max_group_size "
                          f"{static} of action profile {self.name}")

    def _check_action(self, action: ActionCall) -> ActionCall:
        if not isinstance(action, ActionCall):
            raise invalid(f"action profile {self.name}: {action!r} is not an action")
        if action.action not in self._actions:
            raise invalid(f"unknown action {action.action!r}")
        if action.action not in self._allowed:
            raise invalid(f"invalid action {action.action} for action profile {self.name}")
        return check_action_args(self._actions[action.action], action)

    def _new_handle(self, call: ActionCall) -> int:
        handle = self._handles.get()
        self._action_of[handle] = call
        return handle

    def _free_handle(self, handle: int) -> None:
        self._handles.release(handle)
        del self._action_of[handle]

    def _update_members(self, group: Group, members: Sequence[GroupMember]) -> None:
        members = [(m[0], m[1], m[2] if len(m) > 2 else None) for m in members]
        if any(weight <= 0 for _, weight, _ in members):
            raise invalid("member weight must be a positive integer value")
        total = sum(weight for _, weight, _ in members)
        limit = group.max_size or self.model.max_group_size
        if limit > 0 and total > limit:
            raise exhausted(f"action profile {self.name}: sum of member weights {total} "
                            f"exceeds the maximum group size {limit}")
        desired: dict[int, tuple[int, int | None]] = {}
        for member_id, weight, watch in members:
            if member_id not in self._members:
                raise not_found(f"action profile {self.name}: member id {member_id} "
                                "does not exist")
            if member_id in desired:
                raise invalid(f"duplicate member id {member_id} for group {group.group_id}, "
                              "use weights instead")
            desired[member_id] = (weight, watch)
        touched = sorted(set(desired) | set(group.members))
        for member_id in touched:  # copies are created in member-id order, as PI does
            member = self._members[member_id]
            old = group.members.get(member_id, (0, None))[0]
            new = desired.get(member_id, (0, None))[0]
            while len(member.handles) < new:
                member.handles.append(self._new_handle(member.action))
            if old:
                member.weight_counts[old] -= 1
            if new:
                member.weight_counts[new] += 1
        group.members = dict(sorted(desired.items()))
        group.set_slots([(h, watch) for mid, (w, watch) in group.members.items()
                         for h in self._members[mid].handles[:w]])
        for member_id in touched:
            self._purge(self._members[member_id])

    def _purge(self, member: Member) -> None:
        """Free the weighted copies no group needs any more."""
        counts = member.weight_counts
        for weight in [w for w, c in counts.items() if c <= 0]:
            del counts[weight]
        keep = max(counts) if counts else 1
        while len(member.handles) > keep:
            self._free_handle(member.handles.pop())
