"""All of one device's runtime state, built from a program's control-plane model."""

from __future__ import annotations

from collections.abc import Callable

from p4switch.cpmodel import ControlPlaneModel
from p4switch.runtime.action_profiles import ActionProfile
from p4switch.runtime.counters import CounterArray
from p4switch.runtime.digests import DigestConfig
from p4switch.runtime.meters import MeterArray
from p4switch.runtime.pre import PacketReplicationEngine
from p4switch.runtime.registers import RegisterArray
from p4switch.runtime.tables import Table


class RuntimeState:
    """Tables, action profiles, counters, meters, registers, PRE and digests of one device.

    `counters` and `meters` hold the indexed (non-direct) externs; direct counters and meters
    live in the table entries. `port_up(port)` tells whether a port is up (watch ports).
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
        self.counters = {c.name: CounterArray(c.name, c.size, c.unit)
                         for c in model.counters if not c.direct_table}
        self.meters = {m.name: MeterArray(m.name, m.size, m.unit)
                       for m in model.meters if not m.direct_table}
        self.registers = {r.name: RegisterArray(r.name, r.bitwidth, r.size, r.signed)
                          for r in model.registers}
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
        for extern in (*self.counters.values(), *self.meters.values(),
                       *self.registers.values()):
            extern.reset()
        self.pre.reset()
        self.digests.reset()

    # ---- lookups by P4Info name or alias (runtime CLI, STF) ----------------------------------

    def table(self, name: str) -> Table:
        return _by_name(self.tables, name, "table")

    def action_profile(self, name: str) -> ActionProfile:
        return _by_name(self.action_profiles, name, "action profile")

    def counter(self, name: str) -> CounterArray:
        return _by_name(self.counters, name, "counter")

    def meter(self, name: str) -> MeterArray:
        return _by_name(self.meters, name, "meter")

    def register(self, name: str) -> RegisterArray:
        return _by_name(self.registers, name, "register")


def _by_name(items: dict, name: str, kind: str):
    """Exact fully qualified name, else a unique dot-suffix (`ipv4_lpm` for
    `MyIngress.ipv4_lpm`)."""
    if name in items:
        return items[name]
    matches = [v for k, v in items.items() if k.endswith("." + name)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise KeyError(f"{kind} name {name!r} is ambiguous: "
                       + ", ".join(sorted(k for k in items if k.endswith("." + name))))
    raise KeyError(f"no {kind} named {name!r}")
