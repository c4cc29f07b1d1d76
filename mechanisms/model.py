"""What a mechanism of the lab's P4 program is, as the rest of the lab sees it.

A `Mechanism` is one include file of `p4src/include/` and the control-plane names it gives the
program: tables, actions, counters, registers (full names as p4c writes them in the P4Info,
`FabricEgress.port_io.tx_port_counter`), the `Knob`s the controller turns and the `Telemetry`
the experiments and the web view read. A `Program` is a top-level `p4src/*.p4` and the
mechanisms it includes. Plain data: nothing here compiles or connects; of the lab it imports
only the errors' base (`topos.errors`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from topos.errors import FabricLabError


class MechanismError(FabricLabError, KeyError):
    """A name no mechanism (or program) describes; the message lists what there is."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class Control:
    """A P4 control of the include and where the program instantiates it (`FabricEgress.ecn`);
    its tables, actions and externs are named `<instance>.<local name>`."""

    type_name: str
    instance: str

    def name(self, local: str) -> str:
        """The full control-plane name of `local` (a table, action, counter, register)."""
        return f"{self.instance}.{local}"


@dataclass(frozen=True)
class Knob:
    """Something the controller sets through one table: entries keyed by `match` (match field
    names), or with no `match` the table's default action. `action`'s parameters are `params`."""

    name: str
    table: str
    action: str
    params: tuple[str, ...] = ()
    match: tuple[str, ...] = ()
    doc: str = ""

    @property
    def sets_default(self) -> bool:
        return not self.match


@dataclass(frozen=True)
class Telemetry:
    """A counter or register cell array the lab reads while traffic runs. `key` is the short
    name results use (a CSV column); `index` says what a cell index stands for."""

    key: str
    p4_name: str
    kind: Literal["counter", "register"]
    index: str = "port"
    doc: str = ""
    reset_after_read: bool = False  # a maximum since the last read: the reader zeroes it


@dataclass(frozen=True)
class Mechanism:
    """One include of the P4 program, described for the controller, experiments and views."""

    name: str
    include: Path
    summary: str
    controls: tuple[Control, ...] = ()
    tables: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    action_profiles: tuple[str, ...] = ()
    counters: tuple[str, ...] = ()
    registers: tuple[str, ...] = ()
    knobs: tuple[Knob, ...] = ()
    telemetry: tuple[Telemetry, ...] = ()
    needs: tuple[str, ...] = ()  # mechanisms whose include this one includes or relies on

    def names(self) -> set[str]:
        """Every control-plane name the mechanism gives the program."""
        return {*self.tables, *self.actions, *self.action_profiles, *self.counters,
                *self.registers}

    def knob(self, name: str) -> Knob:
        return _pick(f"knob of mechanism {self.name}", {k.name: k for k in self.knobs}, name)

    def telemetry_item(self, key: str) -> Telemetry:
        return _pick(f"telemetry of mechanism {self.name}",
                     {t.key: t for t in self.telemetry}, key)

    def problems(self) -> list[str]:
        """What does not add up within the description (knobs and telemetry naming tables,
        actions, counters, registers the mechanism does not list)."""
        out = []
        for knob in self.knobs:
            if knob.table not in self.tables:
                out.append(f"{self.name}: knob {knob.name} sets table {knob.table}, not listed")
            if knob.action not in self.actions:
                out.append(f"{self.name}: knob {knob.name} uses action {knob.action}, not listed")
        for item in self.telemetry:
            listed = self.counters if item.kind == "counter" else self.registers
            if item.p4_name not in listed:
                out.append(f"{self.name}: telemetry {item.key} reads {item.kind} "
                           f"{item.p4_name}, not listed")
        return out


@dataclass(frozen=True)
class Program:
    """A top-level P4 program: its file and the mechanisms it includes."""

    name: str
    path: Path
    summary: str
    mechanisms: tuple[Mechanism, ...] = field(default_factory=tuple)

    def names(self) -> set[str]:
        """Every control-plane name its mechanisms describe (`NoAction` is p4c's own)."""
        return set().union(*(m.names() for m in self.mechanisms))

    def has(self, mechanism: str) -> bool:
        return any(m.name == mechanism for m in self.mechanisms)

    def telemetry(self) -> dict[str, Telemetry]:
        """Every telemetry item of its mechanisms, by key."""
        return {t.key: t for m in self.mechanisms for t in m.telemetry}


def _pick(what: str, items: dict, name: str):
    if name not in items:
        raise MechanismError(f"no {what} named {name!r} (there are: {', '.join(items) or 'none'})")
    return items[name]


def by_name(what: str, items: Iterable, name: str):
    """The item of `items` (each with a `.name`) called `name`, or a MechanismError listing them."""
    return _pick(what, {item.name: item for item in items}, name)
