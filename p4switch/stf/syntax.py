"""The statements of an STF test (p4c `tools/stf`, the BMv2 dialect of `backends/bmv2/bmv2stf.py`).

Plain data produced by `p4switch.stf.parser`. Numbers stay as written (`0x0a**`, `0b1*`, `12`)
because their meaning depends on the key field they are matched against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# simple_switch_CLI commands an STF file may contain, passed through unchanged.
CLI_COMMANDS = (
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "mirroring_get",
    "mc_mgrp_create",
    "mc_node_create",
    "mc_node_update",
    "mc_node_associate",
    "counter_read",
    "counter_write",
    "register_read",
    "register_write",
    "register_reset",
    "meter_get_rates",
    "meter_set_rates",
    "meter_array_set_rates",
)


@dataclass
class Statement:
    line: int = field(default=0, kw_only=True)


@dataclass
class Packet(Statement):
    """`packet <port> <hex>`: inject a packet."""

    port: int
    data: bytes


@dataclass
class Expect(Statement):
    """`expect <port> [<hex with * nibbles>][$]`: the next packet out of `port`.

    `pattern` is upper-case hex with `*` for don't-care nibbles, None when no data was given
    (any packet); a packet matches when it starts with the pattern (`exact`: and is no longer).
    """

    port: int
    pattern: str | None
    exact: bool = False


@dataclass
class KeyMatch:
    """`<field>:<value>` or `<field>:<value>/<prefix length>` of an `add`."""

    field: str
    value: str
    prefix_len: str | None = None


@dataclass
class ActionSpec:
    name: str
    args: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Add(Statement):
    """`add <table> [<priority>] <key matches> <action>(<args>) [= <entry id>]`."""

    table: str
    priority: int | None
    matches: list[KeyMatch]
    action: ActionSpec
    entry_id: str | None = None


@dataclass
class SetDefault(Statement):
    table: str
    action: ActionSpec


@dataclass
class Remove(Statement):
    """`remove all`."""


@dataclass
class CheckCounter(Statement):
    """`check_counter <counter>(<index or entry id>) [packets|bytes <op> <value>]`."""

    counter: str
    index: str
    count_type: str | None = None  # "packets" / "bytes"
    op: str = "=="
    value: int = 0


@dataclass
class Wait(Statement):
    pass


@dataclass
class NoPacket(Statement):
    pass


@dataclass
class CliCommand(Statement):
    """A simple_switch_CLI command passed through unchanged (`mc_node_create 0 1 2`, ...)."""

    command: str
    args: list[str]

    def text(self) -> str:
        return " ".join([self.command, *self.args])
