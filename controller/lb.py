"""Run-time load-balancing knobs: which program (mode) runs, the flowlet gap, DLB tagging ports.

    lb = LoadBalancing(ctl)                 # ctl: a connected, programmed FabricController
    lb.mode                                 # "ecmp", "flowlet", "dlb" or "qdlb" (from the P4Info)
    lb.configure(flowlet_gap_us=20000)      # flowlet: default action of flowlet_gap, every switch
    lb.configure()                          # dlb/qdlb: host-facing ports listed in host_ports
    lb.configure(switch_tags=False)         # dlb/qdlb: no switch tags (hosts may tag, or none)
    lb.configure(queue_aware=False)         # qdlb: load comparison off (round robin)
    lb.switch_mode("qdlb", target="p4switch")  # push qdlb.p4 everywhere, routes, then the knobs

Modes: `dlb` sprays round robin, blind to load; `qdlb` (queue-aware DLB) picks per packet the
less loaded of two live members by egress queue depth (`p4src/include/qdlb.p4`). The four
programs (`p4src/{ecmp,flowlet,dlb,qdlb}.p4`) share table and action names, so the routes
the controller writes are the same in every mode; only these knobs differ. They live in tables
the route sync never touches, and writing them is idempotent: the state is read back and only the
differences are written (the controller's own `DeviceState` / `plan_updates`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.fabric import FabricController
from controller.intent import Intent
from controller.knobs import knob_state, read_knob, sync_knob
from controller.pipeline import build_pipeline
from controller.schema import Schema, SchemaError
from controller.state import DeviceState
from mechanisms import LB_MODES, P4SRC, Knob, flowlet, qdlb, tagging
from targets import Target
from topos.errors import FabricLabError
from topos.model import FabricSpec

MODES = LB_MODES
TAGGING_MODES = ("dlb", "qdlb")
DEFAULT_FLOWLET_GAP_US = flowlet.DEFAULT_GAP_US  # the program's own default (10 ms, 10 Mb/s links)


class LbError(FabricLabError, ValueError):
    """A knob the running program does not have, or a bad value for it."""


@dataclass(frozen=True)
class LbNames:
    """Names of the load-balancing knobs in the P4Info (`mechanisms.flowlet`, `.tagging`,
    `.qdlb`)."""

    gap_table: str = flowlet.GAP_TABLE
    gap_action: str = flowlet.GAP_ACTION
    gap_param: str = flowlet.GAP_PARAM
    tag_table: str = tagging.HOST_PORTS_TABLE
    tag_field: str = tagging.HOST_PORT_FIELD
    tag_action: str = tagging.TAG_ACTION
    dlb_table: str = qdlb.PARAMS_TABLE
    dlb_action: str = qdlb.PARAMS_ACTION
    dlb_param: str = qdlb.AWARE_PARAM

    @property
    def gap_knob(self) -> Knob:
        return Knob("flowlet_gap", self.gap_table, self.gap_action, (self.gap_param,))

    @property
    def tag_knob(self) -> Knob:
        return Knob("host_ports", self.tag_table, self.tag_action, (), (self.tag_field,))

    @property
    def aware_knob(self) -> Knob:
        return Knob("queue_aware", self.dlb_table, self.dlb_action, (self.dlb_param,))


NAMES = LbNames()


def program_path(mode: str) -> Path:
    """The P4 program of a load-balancing mode."""
    if mode not in MODES:
        raise LbError(f"unknown load-balancing mode {mode!r}; choose from {', '.join(MODES)}")
    return P4SRC / f"{mode}.p4"


def mode_of(schema: Schema, names: LbNames = NAMES) -> str:
    """The mode a P4Info belongs to, from the knobs it has."""
    def has(table: str) -> bool:
        try:
            schema.table(table)
        except SchemaError:
            return False
        return True

    if has(names.dlb_table):
        return "qdlb"
    if has(names.tag_table):
        return "dlb"
    if has(names.gap_table):
        return "flowlet"
    return "ecmp"


def host_facing_ports(spec: FabricSpec) -> dict[str, list[int]]:
    """Per switch, the ports whose far end is a NIC (where DLB tags packets), sorted."""
    out: dict[str, list[int]] = {sw.name: [] for sw in spec.switches}
    for link in spec.links:
        for end, far in ((link.a, link.b), (link.b, link.a)):
            if spec.is_switch(end.node) and not spec.is_switch(far.node):
                out[end.node].append(end.port)
    return {name: sorted(ports) for name, ports in out.items()}


def check_gap(gap_us: int) -> int:
    if not isinstance(gap_us, int) or isinstance(gap_us, bool) or not 0 < gap_us < 1 << 48:
        raise LbError(f"flowlet gap must be a whole number of microseconds > 0, got {gap_us!r}")
    return gap_us


class LoadBalancing:
    """The load-balancing knobs of every switch a `FabricController` is connected to."""

    def __init__(self, ctl: FabricController, names: LbNames = NAMES) -> None:
        self.ctl = ctl
        self.names = names

    @property
    def mode(self) -> str:
        return mode_of(self.ctl.schema, self.names)

    # ---- the knobs -----------------------------------------------------------------------
    def configure(self, flowlet_gap_us: int | None = None, *, switch_tags: bool = True,
                  queue_aware: bool | None = None) -> dict[str, int]:
        """Bring every switch's knobs to what the running mode needs; writes per switch.

        flowlet: the gap (default `DEFAULT_FLOWLET_GAP_US`); dlb/qdlb: the host-facing ports of
        the fabric model tag (none with `switch_tags=False`), no other port does; qdlb: queue
        awareness on (default) or off; ecmp: nothing (a gap is refused)."""
        mode = self.mode
        if flowlet_gap_us is not None:
            check_gap(flowlet_gap_us)
            if mode != "flowlet":
                raise LbError(f"the running program is {mode}.p4: it has no flowlet gap")
        if queue_aware is not None and mode != "qdlb":
            raise LbError(f"the running program is {mode}.p4: it has no queue-aware switch")
        if mode == "ecmp":
            return dict.fromkeys(self.ctl.clients, 0)
        gap = flowlet_gap_us if flowlet_gap_us is not None else DEFAULT_FLOWLET_GAP_US
        ports = host_facing_ports(self.ctl.spec) if switch_tags else {}
        writes = self.ctl._each(self.ctl.clients,
                                lambda name: self._sync(name, mode, gap, ports.get(name, [])))
        if mode == "qdlb":
            aware = True if queue_aware is None else queue_aware
            extra = self.ctl._each(self.ctl.clients, lambda name: self._sync_aware(name, aware))
            writes = {name: writes[name] + extra[name] for name in writes}
        return writes

    def queue_aware(self) -> dict[str, bool]:
        """Whether every switch compares queue depths (qdlb mode only), read back."""
        if self.mode != "qdlb":
            raise LbError(f"the running program is {self.mode}.p4: it is not queue-aware")
        knob = self.names.aware_knob

        def one(name: str) -> bool:
            action = self._read(name, knob).defaults.get(self._table_id(knob))
            return True if action is None else int.from_bytes(action[2][0][1], "big") != 0
        return self.ctl._each(self.ctl.clients, one)

    def set_flowlet_gap(self, gap_us: int) -> None:
        """Set the flowlet gap on every switch (flowlet mode only)."""
        self.configure(flowlet_gap_us=gap_us)

    def flowlet_gaps(self) -> dict[str, int]:
        """The flowlet gap (µs) every switch holds, read back."""
        if self.mode != "flowlet":
            raise LbError(f"the running program is {self.mode}.p4: it has no flowlet gap")
        knob = self.names.gap_knob

        def one(name: str) -> int:
            action = self._read(name, knob).defaults.get(self._table_id(knob))
            if action is None:
                return DEFAULT_FLOWLET_GAP_US  # never written: the program's default
            return int.from_bytes(action[2][0][1], "big")
        return self.ctl._each(self.ctl.clients, one)

    def tagging_ports(self) -> dict[str, list[int]]:
        """The ports every switch tags on, read back (dlb and qdlb modes)."""
        if self.mode not in TAGGING_MODES:
            raise LbError(f"the running program is {self.mode}.p4: it tags nothing")
        def one(name: str) -> list[int]:
            state = self._read(name, self.names.tag_knob)
            return sorted(int.from_bytes(key[1][0][2], "big") for key in state.entries)
        return self.ctl._each(self.ctl.clients, one)

    # ---- changing the program ------------------------------------------------------------
    def switch_mode(self, mode: str, *, target: Target | str, flowlet_gap_us: int | None = None,
                    switch_tags: bool = True) -> None:
        """Run `mode`'s program on every switch: push it, rewrite the routes, set the knobs.

        The pipeline push resets the switches' tables and registers; forwarding stops from the
        push until the routes are back (a fraction of a second on the lab's fabrics)."""
        pipeline = build_pipeline(program_path(mode), target)
        ctl = self.ctl
        ctl.pipeline = pipeline
        ctl.schema = Schema(pipeline.p4info)
        ctl.intent = Intent(ctl.schema, ctl.intent.names, caps=pipeline.target.caps)
        ctl.program()
        self.configure(flowlet_gap_us if mode == "flowlet" else None, switch_tags=switch_tags)

    # ---- state ---------------------------------------------------------------------------
    def _want(self, mode: str, gap_us: int, ports: list[int]) -> DeviceState:
        schema, n = self.ctl.schema, self.names
        if mode == "flowlet":
            return knob_state(schema, n.gap_knob, default={n.gap_param: gap_us})
        if mode in TAGGING_MODES:
            return knob_state(schema, n.tag_knob, [((port,), {}) for port in ports])
        return DeviceState()

    def _table_id(self, knob: Knob) -> int:
        return self.ctl.schema.table(knob.table).preamble.id

    def _read(self, name: str, knob: Knob) -> DeviceState:
        """The knob's entries, or its default action, as the switch holds them."""
        return read_knob(self.ctl.clients[name], self.ctl.schema, knob)

    def _sync_aware(self, name: str, aware: bool) -> int:
        n = self.names
        want = knob_state(self.ctl.schema, n.aware_knob, default={n.dlb_param: int(aware)})
        return sync_knob(self.ctl.clients[name], self.ctl.schema, n.aware_knob, want)

    def _sync(self, name: str, mode: str, gap_us: int, ports: list[int]) -> int:
        knob = self.names.gap_knob if mode == "flowlet" else self.names.tag_knob
        return sync_knob(self.ctl.clients[name], self.ctl.schema, knob,
                         self._want(mode, gap_us, ports))
