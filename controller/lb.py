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

from p4.v1 import p4runtime_pb2

from controller.fabric import FabricController
from controller.intent import Intent
from controller.p4rt import P4RuntimeError
from controller.pipeline import build_pipeline
from controller.schema import Schema, SchemaError, encode
from controller.state import DeviceState, add_read_entities, plan_updates
from targets import Target
from topos.model import FabricSpec

P4SRC = Path(__file__).resolve().parent.parent / "p4src"
MODES = ("ecmp", "flowlet", "dlb", "qdlb")
TAGGING_MODES = ("dlb", "qdlb")
DEFAULT_FLOWLET_GAP_US = 10_000  # the program's own default (10 ms, for 10 Mb/s links)


class LbError(ValueError):
    """A knob the running program does not have, or a bad value for it."""


@dataclass(frozen=True)
class LbNames:
    """Names of the load-balancing knobs in the P4Info (`p4src/include/{flowlet,dlb}.p4`)."""

    gap_table: str = "FabricIngress.load_balancing.flowlet_gap"
    gap_action: str = "FabricIngress.load_balancing.set_flowlet_gap"
    gap_param: str = "gap"
    tag_table: str = "FabricIngress.reorder_tagging.host_ports"
    tag_field: str = "standard_metadata.ingress_port"
    tag_action: str = "FabricIngress.reorder_tagging.tag_from_host_port"
    dlb_table: str = "FabricIngress.load_balancing.dlb_params"
    dlb_action: str = "FabricIngress.load_balancing.set_dlb_params"
    dlb_param: str = "aware"


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
        table_id = self.ctl.schema.table(self.names.dlb_table).preamble.id

        def one(name: str) -> bool:
            action = self._read(name, table_id, default=True).defaults.get(table_id)
            return True if action is None else int.from_bytes(action[2][0][1], "big") != 0
        return self.ctl._each(self.ctl.clients, one)

    def set_flowlet_gap(self, gap_us: int) -> None:
        """Set the flowlet gap on every switch (flowlet mode only)."""
        self.configure(flowlet_gap_us=gap_us)

    def flowlet_gaps(self) -> dict[str, int]:
        """The flowlet gap (µs) every switch holds, read back."""
        if self.mode != "flowlet":
            raise LbError(f"the running program is {self.mode}.p4: it has no flowlet gap")
        table_id = self.ctl.schema.table(self.names.gap_table).preamble.id

        def one(name: str) -> int:
            state = self._read(name, table_id, default=True)
            action = state.defaults.get(table_id)
            if action is None:
                return DEFAULT_FLOWLET_GAP_US  # never written: the program's default
            return int.from_bytes(action[2][0][1], "big")
        return self.ctl._each(self.ctl.clients, one)

    def tagging_ports(self) -> dict[str, list[int]]:
        """The ports every switch tags on, read back (dlb and qdlb modes)."""
        if self.mode not in TAGGING_MODES:
            raise LbError(f"the running program is {self.mode}.p4: it tags nothing")
        table_id = self.ctl.schema.table(self.names.tag_table).preamble.id

        def one(name: str) -> list[int]:
            state = self._read(name, table_id, default=False)
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
        want = DeviceState()
        if mode == "flowlet":
            table = schema.table(n.gap_table)
            action = schema.action(n.gap_action)
            param = schema.param(n.gap_action, n.gap_param)
            want.defaults[table.preamble.id] = (
                "action", action.preamble.id,
                ((param.id, encode(gap_us, param.bitwidth, "flowlet gap")),))
        elif mode in TAGGING_MODES:
            table = schema.table(n.tag_table)
            field = schema.match_field(n.tag_table, n.tag_field)
            action = schema.action(n.tag_action)
            for port in ports:
                match = ((field.id, "exact", encode(port, field.bitwidth, "port")),)
                want.entries[(table.preamble.id, match, 0)] = ("action", action.preamble.id, ())
        return want

    def _read(self, name: str, table_id: int, *, default: bool) -> DeviceState:
        """The table's entries, or its default action, as the switch holds them."""
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = table_id
        entity.table_entry.is_default_action = default
        try:
            return add_read_entities(DeviceState(), self.ctl.clients[name].read([entity]))
        except P4RuntimeError as err:
            if default and err.code == "UNIMPLEMENTED":
                return DeviceState()  # default entries unreadable here: rewriting is harmless
            raise

    def _sync_aware(self, name: str, aware: bool) -> int:
        schema, n = self.ctl.schema, self.names
        table = schema.table(n.dlb_table)
        action = schema.action(n.dlb_action)
        param = schema.param(n.dlb_action, n.dlb_param)
        want = DeviceState()
        want.defaults[table.preamble.id] = (
            "action", action.preamble.id,
            ((param.id, encode(int(aware), param.bitwidth, "queue-aware")),))
        have = self._read(name, table.preamble.id, default=True)
        writes = 0
        for batch in plan_updates(want, have):
            self.ctl.clients[name].write(batch)
            writes += len(batch)
        return writes

    def _sync(self, name: str, mode: str, gap_us: int, ports: list[int]) -> int:
        want = self._want(mode, gap_us, ports)
        table = self.names.gap_table if mode == "flowlet" else self.names.tag_table
        have = self._read(name, self.ctl.schema.table(table).preamble.id,
                          default=mode == "flowlet")
        writes = 0
        for batch in plan_updates(want, have):
            self.ctl.clients[name].write(batch)
            writes += len(batch)
        return writes
