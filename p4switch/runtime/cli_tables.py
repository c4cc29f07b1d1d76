"""Runtime CLI commands for tables and action profiles (BMv2 `runtime_CLI.py` syntax/output)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p4switch.cpmodel import ActionCall
from p4switch.names import suffix_matches
from p4switch.runtime.cli_base import CommandGroup
from p4switch.runtime.cli_parsing import (
    CliError,
    byte_str,
    dump_key,
    hexstr,
    parse_int,
    parse_key,
    parse_param,
    table_match_type,
    to_cli_priority,
    to_p4rt_priority,
)
from p4switch.runtime.entries import Entry, GroupRef, MemberRef, OneShot
from p4switch.runtime.errors import RuntimeApiError

# our status code -> BMv2 TableOperationErrorCode, per kind of operation
ENTRY_CODES = {"ALREADY_EXISTS": "DUPLICATE_ENTRY", "RESOURCE_EXHAUSTED": "TABLE_FULL",
               "NOT_FOUND": "INVALID_HANDLE", "PERMISSION_DENIED": "IMMUTABLE_TABLE_ENTRIES",
               "INVALID_ARGUMENT": "BAD_MATCH_KEY", "UNKNOWN": "EMPTY_GRP"}
DEFAULT_CODES = {"PERMISSION_DENIED": "DEFAULT_ACTION_IS_CONST",
                 "INVALID_ARGUMENT": "INVALID_ACTION_NAME"}
PROFILE_CODES = {"NOT_FOUND": "INVALID_MBR_HANDLE", "FAILED_PRECONDITION": "MBR_STILL_USED",
                 "INVALID_ARGUMENT": "ERROR", "RESOURCE_EXHAUSTED": "ERROR"}


def table_error(e: RuntimeApiError, codes: dict[str, str]) -> CliError:
    name = codes.get(e.code, "ERROR")
    if name == "IMMUTABLE_TABLE_ENTRIES" and "const entries" not in e.message:
        name = "ERROR"  # e.g. an action scope violation
    return CliError(f"Invalid table operation ({name}): {e.message}")


class TableCommands(CommandGroup):
    """The table commands of CliInterpreter, and the helpers the action-profile commands use."""

    if TYPE_CHECKING:  # an indirect table's dump shows its profile (cli_profiles)
        def _dump_profile(self, profile: Any) -> None: ...

    # ---- helpers -----------------------------------------------------------------------------

    def _action(self, owner_actions: set[str], owner: str, name: str, what: str = "Table"):
        action = self.resolve_action(name)
        if action is None:  # ambiguous program-wide: a unique suffix among the owner's actions
            mine = suffix_matches(owner_actions, name)
            action = self.state.model.action(mine[0]) if len(mine) == 1 else None
        if action is None or action.name not in owner_actions:
            if what == "Table":
                raise CliError(f"Error: Table {owner} has no action {name}")
            raise CliError(f"Error: Action profile '{owner}' has no action '{name}'")
        return action

    def _runtime_data(self, action, params: list[str]) -> tuple[ActionCall, list[str]]:
        if len(params) != len(action.params):
            raise CliError(f"Error: Action {action.name} needs {len(action.params)} parameters")
        values = []
        for text, param in zip(params, action.params, strict=True):
            try:
                values.append(parse_param(text, param.bitwidth))
            except CliError as e:
                raise CliError(f"Invalid runtime data: Error while parsing {text} - {e}") from None
        shown = [byte_str(v, p.bitwidth) for v, p in zip(values, action.params, strict=True)]
        return ActionCall(action.name, tuple(values)), shown

    def _priority(self, table, args: list[str]) -> int:
        if not table.needs_priority:
            return 0
        try:
            cli_priority = int(args.pop(-1))
        except (ValueError, IndexError):
            raise CliError("Error: Table is ternary, but could not extract a valid priority "
                           "from args") from None
        return to_p4rt_priority(cli_priority)

    def _keys(self, table, name: str, texts: list[str]):
        if len(texts) != len(table.match_fields):
            raise CliError(f"Error: Table {name} needs {len(table.match_fields)} key fields")
        parsed = [parse_key(f, t) for f, t in zip(table.match_fields, texts, strict=True)]
        return tuple(k for k, _ in parsed), [s for _, s in parsed]

    def _split_arrow(self, args: list[str], start: int) -> tuple[list[str], list[str]]:
        for i in range(start, len(args)):
            if args[i] == "=>":
                return args[start:i], args[i + 1:]
        return args[start:], []

    def _data_str(self, call: ActionCall) -> str:
        action = self.state.model.action(call.action)
        return ", ".join(hexstr(v, p.bitwidth)
                         for v, p in zip(call.args, action.params, strict=True))

    def _dump_action(self, table, action) -> None:
        if action is None:
            self.p("EMPTY")
        elif isinstance(action, ActionCall):
            self.p(f"Action entry: {action.action} - {self._data_str(action)}")
        elif isinstance(action, MemberRef):
            self.p(f"Index: member({table.profile.member(action.member_id).handles[0]})")
        elif isinstance(action, (GroupRef, OneShot)):
            self.p(f"Index: group({table.profile.group_handle(action.group_id)})")

    def _dump_entry(self, table, entry: Entry) -> None:
        fields = table.match_fields
        w = max([20, *(len(f.name) for f in fields)])
        self.p(f"Dumping entry {hex(entry.handle)}")
        self.p("Match key:")
        for field, fm in zip(fields, entry.keys, strict=True):
            kind, value = dump_key(field, fm)
            self.p(f"* {field.name:{w}}: {kind:10}{value}")
        if table.needs_priority:
            self.p(f"Priority: {to_cli_priority(entry.priority)}")
        self._dump_action(table, entry.action)

    # ---- tables ------------------------------------------------------------------------------

    def do_table_add(self, args: list[str]) -> None:
        self.at_least(args, 3)
        name, action_name = args[0], args[1]
        table = self.resolve("table", name)
        action = self._action(set(table.action_names), name, action_name)
        priority = self._priority(table, args)
        key_texts, params = self._split_arrow(args, 2)
        if len(key_texts) != len(table.match_fields):
            raise CliError(f"Error: Table {name} needs {len(table.match_fields)} key fields")
        call, shown_data = self._runtime_data(action, params)
        keys, shown_keys = self._keys(table, name, key_texts)
        self.p(f"Adding entry to {table_match_type(table.match_fields)} match table {name}")
        self.p("{:20} {}".format("match key:", "\t".join(shown_keys)))
        self.p("{:20} {}".format("action:", action_name))
        self.p("{:20} {}".format("runtime data:", "\t".join(shown_data)))
        entry = Entry(keys=keys, priority=priority, action=call)
        try:
            table.insert(entry)
        except RuntimeApiError as e:
            raise table_error(e, ENTRY_CODES) from None
        self.p("Entry has been added with handle", entry.handle)

    def do_table_modify(self, args: list[str]) -> None:
        self.at_least(args, 3)
        name, action_name = args[0], args[1]
        table = self.resolve("table", name)
        action = self._action(set(table.action_names), name, action_name)
        handle = parse_int(args[2], "entry handle")
        params = args[3:]
        if params and params[0] == "=>":
            params = params[1:]
        call, _ = self._runtime_data(action, params)
        self.p("Modifying entry", handle, "for", table_match_type(table.match_fields),
               "match table", name)
        try:
            table.modify_by_handle(handle, call)
        except RuntimeApiError as e:
            raise table_error(e, ENTRY_CODES) from None

    def do_table_delete(self, args: list[str]) -> None:
        self.exactly(args, 2)
        table = self.resolve("table", args[0])
        handle = parse_int(args[1], "entry handle")
        self.p("Deleting entry", handle, "from", args[0])
        try:
            table.delete_by_handle(handle)
        except RuntimeApiError as e:
            raise table_error(e, ENTRY_CODES) from None

    do_table_indirect_delete = do_table_delete

    def do_table_set_default(self, args: list[str]) -> None:
        self.at_least(args, 2)
        name, action_name = args[0], args[1]
        table = self.resolve("table", name)
        action = self._action(set(table.action_names), name, action_name)
        call, shown = self._runtime_data(action, args[2:])
        self.p("Setting default action of", name)
        self.p("{:20} {}".format("action:", action_name))
        self.p("{:20} {}".format("runtime data:", "\t".join(shown)))
        try:
            table.set_default(call)
        except RuntimeApiError as e:
            raise table_error(e, DEFAULT_CODES) from None

    def do_table_reset_default(self, args: list[str]) -> None:
        self.exactly(args, 1)
        try:
            self.resolve("table", args[0]).reset_default()
        except RuntimeApiError as e:
            raise table_error(e, DEFAULT_CODES) from None

    def do_table_num_entries(self, args: list[str]) -> None:
        self.exactly(args, 1)
        self.p(len(self.resolve("table", args[0])))

    def do_table_clear(self, args: list[str]) -> None:
        self.exactly(args, 1)
        self.resolve("table", args[0]).clear()

    def do_table_dump(self, args: list[str]) -> None:
        self.exactly(args, 1)
        table = self.resolve("table", args[0])
        self.p("==========")
        self.p("TABLE ENTRIES")
        for entry in table.entries():
            self.p("**********")
            self._dump_entry(table, entry)
        if table.profile is not None:
            self._dump_profile(table.profile)
        self.p("==========")
        self.p("Dumping default entry")
        self._dump_action(table, None if table.is_indirect else table.default_entry.action)
        self.p("==========")

    def do_table_dump_entry(self, args: list[str]) -> None:
        self.exactly(args, 2)
        table = self.resolve("table", args[0])
        try:
            entry = table.by_handle(parse_int(args[1], "entry handle"))
        except RuntimeApiError as e:
            raise table_error(e, ENTRY_CODES) from None
        self._dump_entry(table, entry)

    def do_table_dump_entry_from_key(self, args: list[str]) -> None:
        self.at_least(args, 1)
        table = self.resolve("table", args[0])
        priority = self._priority(table, args)
        keys, _ = self._keys(table, args[0], args[1:])
        try:
            entry = table.get(keys, priority)
        except RuntimeApiError as e:
            raise table_error(e, ENTRY_CODES) from None
        self._dump_entry(table, entry)

    def do_show_tables(self, args: list[str]) -> None:
        self.exactly(args, 0)
        for name in sorted(self.state.tables):
            self.p(self._table_str(self.state.tables[name]))

    def do_table_info(self, args: list[str]) -> None:
        self.exactly(args, 1)
        table = self.resolve("table", args[0])
        self.p(self._table_str(table))
        self.p("*" * 80)
        self._show_actions(sorted(table.action_names))

    def do_table_show_actions(self, args: list[str]) -> None:
        self.exactly(args, 1)
        self._show_actions(sorted(self.resolve("table", args[0]).action_names))

    def do_show_actions(self, args: list[str]) -> None:
        self.exactly(args, 0)
        self._show_actions(sorted(a.name for a in self.state.model.actions))

    def _show_actions(self, names: list[str]) -> None:
        for name in names:
            action = self.state.model.action(name)
            params = ",\t".join(f"{p.name}({p.bitwidth})" for p in action.params)
            self.p(f"{name:30} [{params}]")

    def _table_str(self, table) -> str:
        impl = table.model.implementation or "None"
        key = ",\t".join(f"{f.name}({f.match_kind}, {f.bitwidth})" for f in table.match_fields)
        return f"{table.name:30} [implementation={impl}, mk={key}]"
