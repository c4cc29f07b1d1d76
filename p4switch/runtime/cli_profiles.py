"""Runtime CLI commands for indirect tables and action profiles (BMv2 `runtime_CLI.py`).

The BMv2 CLI names members and groups by their BMv2 handles; the state keys them by
P4Runtime-style ids. Members/groups created here get the smallest free id; handles are
translated through `ActionProfile.member_by_handle` / `group_by_handle`.
"""

from __future__ import annotations

from p4switch.runtime.cli_parsing import CliError, parse_int
from p4switch.runtime.cli_tables import ENTRY_CODES, PROFILE_CODES, TableCommands, table_error
from p4switch.runtime.entries import Entry, GroupRef, MemberRef
from p4switch.runtime.errors import RuntimeApiError


class ProfileCommands(TableCommands):
    """The action-profile commands of CliInterpreter (and of indirect tables)."""

    # ---- indirect tables and action profiles -------------------------------------------------

    def _indirect_add(self, args: list[str], group: bool) -> None:
        self.at_least(args, 2)
        name = args[0]
        table = self.resolve("table", name)
        if table.profile is None or (group and not table.profile.with_selector):
            raise CliError("Error: Cannot run this command on non-indirect table"
                           + (", or on indirect table with no selector" if group else ""))
        priority = self._priority(table, args)
        key_texts, rest = self._split_arrow(args, 1)
        if len(rest) != 1:
            raise CliError("Error: Invalid arguments, could not find handle")
        handle = parse_int(rest[0], "handle")
        keys, _ = self._keys(table, name, key_texts)
        self.p("Adding entry to indirect match table", table.name)
        try:
            ref: GroupRef | MemberRef
            if group:
                ref = GroupRef(table.profile.group_by_handle(handle).group_id)
            else:
                ref = MemberRef(table.profile.member_by_handle(handle).member_id)
            entry = Entry(keys=keys, priority=priority, action=ref)
            table.insert(entry)
        except RuntimeApiError as e:
            codes = dict(ENTRY_CODES, NOT_FOUND="INVALID_GRP_HANDLE" if group
                         else "INVALID_MBR_HANDLE")
            raise table_error(e, codes) from None
        self.p("Entry has been added with handle", entry.handle)

    def do_table_indirect_add(self, args: list[str]) -> None:
        self._indirect_add(args, group=False)

    def do_table_indirect_add_with_group(self, args: list[str]) -> None:
        self._indirect_add(args, group=True)

    def _profile_op(self, op, codes=PROFILE_CODES):
        try:
            return op()
        except RuntimeApiError as e:
            raise table_error(e, codes) from None

    def do_act_prof_create_member(self, args: list[str]) -> None:
        self.at_least(args, 2)
        profile = self.resolve("action profile", args[0])
        action = self._action(set(profile.action_names), args[0], args[1], what="profile")
        call, _ = self._runtime_data(action, args[2:])
        used = set(profile.members())
        member_id = next(i for i in range(len(used) + 1) if i not in used)
        self._profile_op(lambda: profile.insert_member(member_id, call))
        self.p("Member has been created with handle", profile.member(member_id).handles[0])

    def do_act_prof_delete_member(self, args: list[str]) -> None:
        self.exactly(args, 2)
        profile = self.resolve("action profile", args[0])
        handle = parse_int(args[1], "member handle")
        self._profile_op(
            lambda: profile.delete_member(profile.member_by_handle(handle).member_id))

    def do_act_prof_modify_member(self, args: list[str]) -> None:
        self.at_least(args, 3)
        profile = self.resolve("action profile", args[0])
        action = self._action(set(profile.action_names), args[0], args[1], what="profile")
        handle = parse_int(args[2], "member handle")
        params = args[3:]
        if params and params[0] == "=>":
            params = params[1:]
        call, _ = self._runtime_data(action, params)
        self._profile_op(
            lambda: profile.modify_member(profile.member_by_handle(handle).member_id, call))

    def _selector(self, name: str):
        profile = self.resolve("action profile", name)
        if not profile.with_selector:
            raise CliError("Error: Cannot run this command on an action profile without "
                           "selector")
        return profile

    def do_act_prof_create_group(self, args: list[str]) -> None:
        self.exactly(args, 1)
        profile = self._selector(args[0])
        used = set(profile.groups())
        group_id = next(i for i in range(len(used) + 1) if i not in used)
        self._profile_op(lambda: profile.insert_group(group_id, []))
        self.p("Group has been created with handle", profile.group(group_id).handle)

    def do_act_prof_delete_group(self, args: list[str]) -> None:
        self.exactly(args, 2)
        profile = self._selector(args[0])
        handle = parse_int(args[1], "group handle")
        codes = dict(PROFILE_CODES, NOT_FOUND="INVALID_GRP_HANDLE",
                     FAILED_PRECONDITION="GRP_STILL_USED")
        self._profile_op(
            lambda: profile.delete_group(profile.group_by_handle(handle).group_id), codes)

    def _membership(self, args: list[str], add: bool) -> None:
        self.exactly(args, 3)
        profile = self._selector(args[0])
        mbr = parse_int(args[1], "member handle")
        grp = parse_int(args[2], "group handle")
        member = self._profile_op(lambda: profile.member_by_handle(mbr))
        group = self._profile_op(lambda: profile.group_by_handle(grp),
                                 dict(PROFILE_CODES, NOT_FOUND="INVALID_GRP_HANDLE"))
        members = {mid: (w, watch) for mid, (w, watch) in group.members.items()}
        if add:
            if member.member_id in members:
                raise CliError("Invalid table operation (MBR_ALREADY_IN_GRP)")
            members[member.member_id] = (1, None)
        else:
            if member.member_id not in members:
                raise CliError("Invalid table operation (MBR_NOT_IN_GRP)")
            del members[member.member_id]
        self._profile_op(lambda: profile.modify_group(
            group.group_id, [(mid, w, watch) for mid, (w, watch) in members.items()]))

    def do_act_prof_add_member_to_group(self, args: list[str]) -> None:
        self._membership(args, add=True)

    def do_act_prof_remove_member_from_group(self, args: list[str]) -> None:
        self._membership(args, add=False)

    def _dump_profile(self, profile) -> None:
        self.p("==========")
        self.p("MEMBERS")
        for member in sorted(profile.members().values(), key=lambda m: m.handles[0]):
            self.p("**********")
            self._dump_member(member)
        if profile.with_selector:
            self.p("==========")
            self.p("GROUPS")
            for group in sorted(profile.groups().values(), key=lambda g: g.handle):
                self.p("**********")
                self._dump_group(group)

    def _dump_member(self, member) -> None:
        self.p(f"Dumping member {member.handles[0]}")
        self.p(f"Action entry: {member.action.action} - {self._data_str(member.action)}")

    def _dump_group(self, group) -> None:
        self.p(f"Dumping group {group.handle}")
        self.p("Members: [{}]".format(", ".join(str(h) for h in group.handles)))

    def do_act_prof_dump(self, args: list[str]) -> None:
        self.exactly(args, 1)
        self._dump_profile(self.resolve("action profile", args[0]))

    def do_act_prof_dump_member(self, args: list[str]) -> None:
        self.exactly(args, 2)
        profile = self.resolve("action profile", args[0])
        handle = parse_int(args[1], "member handle")
        self._dump_member(self._profile_op(lambda: profile.member_by_handle(handle)))

    def do_act_prof_dump_group(self, args: list[str]) -> None:
        self.exactly(args, 2)
        profile = self.resolve("action profile", args[0])
        handle = parse_int(args[1], "group handle")
        self._dump_group(self._profile_op(lambda: profile.group_by_handle(handle),
                                          dict(PROFILE_CODES, NOT_FOUND="INVALID_GRP_HANDLE")))
