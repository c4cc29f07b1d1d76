"""What the runtime CLI's command groups share: the runtime state, the output lines of the
command being run, argument-count checks and name resolution.

`CliInterpreter` (`cli_commands`) is the table commands (`cli_tables`), the action-profile
commands (`cli_profiles`, which use the table helpers) and the multicast, extern and queue
commands, over this base.
"""

from __future__ import annotations

from p4switch.names import suffix_matches
from p4switch.runtime.cli_parsing import CliError
from p4switch.runtime.state import RuntimeState


class CommandGroup:
    state: RuntimeState
    out: list[str]  # what the command being run prints, line by line

    def p(self, *parts: object) -> None:
        self.out.append(" ".join(str(x) for x in parts))

    @staticmethod
    def at_least(args: list[str], n: int) -> None:
        if len(args) < n:
            raise CliError("Error: Insufficient number of args")

    @staticmethod
    def exactly(args: list[str], n: int) -> None:
        if len(args) != n:
            raise CliError(f"Error: Wrong number of args, expected {n} but got {len(args)}")

    def resolve(self, kind: str, name: str):
        getter = {"table": self.state.table, "action profile": self.state.action_profile,
                  "counter": self.state.counter, "meter": self.state.meter,
                  "register": self.state.register}[kind]
        try:
            return getter(name)
        except KeyError:
            raise CliError(f"Error: Invalid {kind} name ({name})") from None

    def resolve_action(self, name: str):
        actions = {a.name: a for a in self.state.model.actions}
        if name in actions:
            return actions[name]
        matches = suffix_matches(actions, name)
        return actions[matches[0]] if len(matches) == 1 else None
