"""All of one device's runtime state, built from a program's control-plane model."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from p4switch import externs  # (its modules import p4switch.runtime's)
from p4switch.cpmodel import ControlPlaneModel
from p4switch.names import by_name
from p4switch.runtime.action_profiles import ActionProfile
from p4switch.runtime.digests import DigestConfig
from p4switch.runtime.pre import PacketReplicationEngine
from p4switch.runtime.tables import Table

if TYPE_CHECKING:
    from p4switch.externs.counter import CounterArray
    from p4switch.externs.meter import MeterArray
    from p4switch.externs.register import RegisterArray


class RuntimeState:
    """Tables, action profiles, stateful externs, PRE and digests of one device.

    `externs[type][name]` holds the state of every extern instance that has its own (made by
    its `p4switch.externs` module); `counters`, `meters` and `registers` are the v1model ones.
    Direct counters and meters live in the table entries. `port_up(port)` tells whether a
    port is up (watch ports).
    """

    def __init__(self, model: ControlPlaneModel, *,
                 port_up: Callable[[int], bool] = lambda port: True) -> None:
        self.model = model
        self.port_up = port_up
        actions = {a.name: a for a in model.actions}
        allowed: dict[str, set[str]] = {}
        for t in model.tables:
            if t.implementation:
                allowed.setdefault(t.implementation, set()).update(r.name for r in t.action_refs)
        self.action_profiles: dict[str, ActionProfile] = {
            p.name: ActionProfile(p, actions, sorted(allowed.get(p.name, set())),
                                  port_up=self._port_up)
            for p in model.action_profiles
        }
        direct_meter_units = {m.direct_table: m.unit for m in model.meters if m.direct_table}
        self.tables: dict[str, Table] = {}
        for t in model.tables:
            profile = self.action_profiles.get(t.implementation) if t.implementation else None
            if t.implementation and profile is None:
                raise ValueError(f"table {t.name}: unknown implementation {t.implementation!r}")
            self.tables[t.name] = Table(t, actions, profile,
                                        meter_unit=direct_meter_units.get(t.name, "bytes"))
        self.externs: dict[str, dict[str, Any]] = {}
        for kind, extern in externs.EXTERNS.items():
            new_state = extern.new_state
            if extern.state_objects is None:
                continue
            assert new_state is not None  # an extern with state objects makes their state
            self.externs[kind] = {obj.name: new_state(obj) for obj in extern.state_objects(model)}
        self.counters: dict[str, CounterArray] = self.externs["counter"]
        self.meters: dict[str, MeterArray] = self.externs["meter"]
        self.registers: dict[str, RegisterArray] = self.externs["register"]
        self.pre = PacketReplicationEngine()
        self.digests = DigestConfig([d.name for d in model.digests])
        self._install_initial()

    def _port_up(self, port: int) -> bool:
        return self.port_up(port)

    def _install_initial(self) -> None:
        for table in self.tables.values():
            if table.model.const_entries:
                table.install_const(table.model.const_entries)

    def reset(self) -> None:
        """Back to the program's initial state (const entries and initial defaults only)."""
        for table in self.tables.values():
            table.reset()
        for profile in self.action_profiles.values():
            profile.reset()
        for instances in self.externs.values():
            for extern in instances.values():
                extern.reset()
        self.pre.reset()
        self.digests.reset()

    # ---- lookups by P4Info name or alias (runtime CLI, STF) ----------------------------------

    def table(self, name: str) -> Table:
        return by_name(self.tables, name, "table")

    def action_profile(self, name: str) -> ActionProfile:
        return by_name(self.action_profiles, name, "action profile")

    def counter(self, name: str) -> CounterArray:
        return by_name(self.counters, name, "counter")

    def meter(self, name: str) -> MeterArray:
        return by_name(self.meters, name, "meter")

    def register(self, name: str) -> RegisterArray:
        return by_name(self.registers, name, "register")
