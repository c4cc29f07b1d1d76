"""ECN marking, PFC and packet trimming run-time knobs, programmed over P4Runtime (both targets).

    knobs = CongestionConfig(ecn=EcnProfile(kmin=5, kmax=20, pmax=0.2),
                             pfc=PfcConfig(xoff=10, xon=4, quanta=1000, refresh_us=20_000),
                             dscp_priority=ROCE_CLASSES)
    CongestionConfig(trim=TrimConfig(depth=16))  # trim instead of dropping past 16 packets
    apply_congestion(ctl, knobs)            # every switch of a FabricController
    apply_congestion(ctl, CongestionConfig())  # both off again

What it writes on each switch (`p4src/include/ecn.p4`, `pfc.p4`):
- `ecn_profile`: RED over enq_qdepth as range entries, one per depth between kmin and kmax (mark
  probability pmax * (depth - kmin) / (kmax - kmin)) and one from kmax up (every packet);
  kmin = kmax is a single marking threshold.
- `dscp_priority`: DSCP -> priority (the PFC class and the egress queue). `ROCE_CLASSES` puts
  RoCE data (DSCP 26) on 3 and CNPs/ACKs (DSCP 48) on 6, as RoCE deployments do; only for
  switches started with enough priority queues (p4switch `--priority-queues 8`): p4switch drops
  packets whose priority has no queue. Without a map everything stays on priority 0.
- `pfc_config` (egress): XOFF/XON (packets), pause quanta and refresh period per egress port;
  `pfc_propagation` (ingress): arrivals for a paused queue that pause its upstream; `pfc_link`
  (ingress): the time one quantum stands for per port; and the clone sessions
  PFC_SESSION_BASE + p -> p that carry the pause frames to port p.
- `pfc_rx_mode`: punt received PFC frames to the controller (BMv2's pause agent) or drop them.
- `trim_config` (`p4src/include/trimming.p4`): per egress port and data class, the queue depth
  from which a packet is trimmed, the payload bytes it keeps, and the DSCP and priority it leaves with;
  the trim DSCP is mapped to that priority in `dscp_priority` too, so a trimmed packet keeps
  it at every hop (a priority above 0 needs switches with priority queues, as above).

Every call replaces what the tables held before, so the knobs can be turned while traffic runs.
Depths are packets: BMv2 and p4switch count queues in packets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from p4.v1 import p4runtime_pb2

from controller.knobs import knob_default, knob_entry
from controller.schema import Schema
from mechanisms import ecn, pfc, trimming
from topos.errors import FabricLabError
from topos.model import FabricSpec

Update: TypeAlias = p4runtime_pb2.Update
Entity: TypeAlias = p4runtime_pb2.Entity

# The names and constants are the mechanisms' (`mechanisms.ecn`, `mechanisms.pfc`).
PFC_SESSION_BASE = pfc.SESSION_BASE
MAX_DEPTH = ecn.MAX_DEPTH
ALWAYS = ecn.ALWAYS
ROCE_CLASSES = pfc.ROCE_CLASSES
ECN_TABLE_SIZE = ecn.TABLE_SIZE
ECN_KNOB = ecn.MECHANISM.knob("ecn_threshold")
CLASS_KNOB = pfc.MECHANISM.knob("dscp_priority")
XOFF_XON_KNOB = pfc.MECHANISM.knob("xoff_xon")
PROPAGATION_KNOB = pfc.MECHANISM.knob("propagation")
QUANTUM_KNOB = pfc.MECHANISM.knob("quantum")
PUNT_KNOB = pfc.MECHANISM.knob("punt_frames")
TRIM_KNOB = trimming.MECHANISM.knob("trim")
OWNED_KNOBS = (ECN_KNOB, CLASS_KNOB, XOFF_XON_KNOB, PROPAGATION_KNOB, QUANTUM_KNOB, TRIM_KNOB)


class CongestionConfigError(FabricLabError, ValueError):
    """Bad ECN/PFC parameters; the message lists every problem."""


@dataclass(frozen=True)
class EcnProfile:
    """RED-style marking on the egress queue depth in packets."""

    kmin: int
    kmax: int
    pmax: float = 0.2

    def problems(self) -> list[str]:
        out = []
        if self.kmin < 0:
            out.append(f"ECN kmin must be >= 0 packets, got {self.kmin}")
        if self.kmax < self.kmin:
            out.append(f"ECN kmax ({self.kmax}) must be >= kmin ({self.kmin})")
        if self.kmax - self.kmin >= ECN_TABLE_SIZE:
            out.append(f"ECN kmax - kmin must be < {ECN_TABLE_SIZE} packets (one table entry "
                       f"per depth), got {self.kmax - self.kmin}")
        if not 0.0 <= self.pmax <= 1.0:
            out.append(f"ECN pmax must be in [0, 1], got {self.pmax}")
        return out

    def probability(self, depth: int) -> float:
        """The marking probability of an ECN-capable packet enqueued at `depth`."""
        if depth >= self.kmax:
            return 1.0
        if depth <= self.kmin:
            return 0.0
        return self.pmax * (depth - self.kmin) / (self.kmax - self.kmin)

    def ranges(self) -> list[tuple[int, int, int]]:
        """(low, high, threshold) range entries; a packet is marked if a draw in 0..65534 is
        below the threshold."""
        out = []
        for depth in range(self.kmin + 1, self.kmax):
            threshold = round(self.probability(depth) * 65535)
            if threshold:
                out.append((depth, depth, min(threshold, ALWAYS)))
        out.append((self.kmax, MAX_DEPTH, ALWAYS))
        return out


@dataclass(frozen=True)
class PfcConfig:
    """PFC generation on egress queues: thresholds in packets, pause in quanta (512 bit times
    at `link_mbps`, the rate both ends assume), refresh period in µs while over XOFF.
    `xoff_paused`: arrivals for a paused queue that pause its upstream (default XOFF / 2: the
    queue usually held packets when it stopped)."""

    xoff: int
    xon: int
    quanta: int = 0xFFFF
    refresh_us: int = 10_000
    link_mbps: float = 10.0
    xoff_paused: int | None = None
    priorities: tuple[int, ...] = (3,)  # the lossless classes (RoCE data in ROCE_CLASSES)

    @property
    def paused_threshold(self) -> int:
        return self.xoff_paused if self.xoff_paused is not None else max(1, self.xoff // 2)

    def problems(self) -> list[str]:
        out = []
        if self.xoff <= 0:
            out.append(f"PFC xoff must be > 0 packets, got {self.xoff}")
        if not 0 <= self.xon < self.xoff:
            out.append(f"PFC xon must be in [0, xoff) = [0, {self.xoff}), got {self.xon}")
        if not 0 < self.quanta <= 0xFFFF:
            out.append(f"PFC quanta must be 1..65535, got {self.quanta}")
        if self.refresh_us <= 0:
            out.append(f"PFC refresh must be > 0 µs, got {self.refresh_us}")
        if self.link_mbps <= 0:
            out.append(f"PFC link rate must be > 0 Mb/s, got {self.link_mbps}")
        if self.xoff_paused is not None and self.xoff_paused <= 0:
            out.append(f"PFC xoff_paused must be > 0 packets, got {self.xoff_paused}")
        if not self.priorities or any(not 0 <= p < 8 for p in self.priorities):
            out.append(f"PFC priorities must be some of 0..7, got {self.priorities}")
        return out

    @property
    def quantum_us_q10(self) -> int:
        """µs per quantum x 1024, as pfc_link takes it."""
        return pfc.quantum_us_q10(self.link_mbps * 1e6)

    def pause_s(self) -> float:
        return pfc.pause_seconds(self.quanta, self.link_mbps * 1e6)


@dataclass(frozen=True)
class TrimConfig:
    """Trim a packet of one of `classes` (priorities: the data classes, 0 and RoCE data's 3 in
    ROCE_CLASSES) headed for a queue of at least `depth` packets (the queue as the switch
    estimates it) to its headers and `payload_bytes`, and send it with `dscp` at `priority`
    (on switches with one queue per port: 0, behind the data it would otherwise overtake)."""

    depth: int
    payload_bytes: int = 0
    dscp: int = trimming.TRIM_DSCP
    priority: int = trimming.TRIM_PRIORITY
    classes: tuple[int, ...] = (0, 3)

    def problems(self) -> list[str]:
        out = []
        if self.depth < 0:
            out.append(f"trim depth must be >= 0 packets, got {self.depth}")
        if not 0 <= self.payload_bytes <= 1024:
            out.append(f"trim payload_bytes must be 0..1024, got {self.payload_bytes}")
        if not 0 <= self.dscp < 64:
            out.append(f"trim DSCP must be 0..63, got {self.dscp}")
        if not 0 <= self.priority < 8:
            out.append(f"trim priority must be 0..7, got {self.priority}")
        if not self.classes or any(not 0 <= c < 8 for c in self.classes):
            out.append(f"trim classes must be some of 0..7, got {self.classes}")
        return out


@dataclass(frozen=True)
class CongestionConfig:
    ecn: EcnProfile | None = None  # None: no marking
    pfc: PfcConfig | None = None  # None: no pause frames generated
    pfc_ports: tuple[int, ...] | None = None  # egress ports with PFC; None: every port
    dscp_priority: Mapping[int, int] = field(default_factory=dict)  # e.g. ROCE_CLASSES
    punt_pfc: bool = False  # hand received PFC frames to the controller (BMv2 pause agent)
    trim: TrimConfig | None = None  # None: full queues drop
    trim_ports: tuple[int, ...] | None = None  # egress ports that trim; None: every port

    @property
    def classes(self) -> dict[int, int]:
        """DSCP -> priority as written: `dscp_priority` and the trim DSCP's."""
        out = dict(self.dscp_priority)
        if self.trim is not None:
            out.setdefault(self.trim.dscp, self.trim.priority)
        return out

    def problems(self) -> list[str]:
        out = (self.ecn.problems() if self.ecn else []) + (self.pfc.problems() if self.pfc else [])
        if self.trim is not None:
            out += self.trim.problems()
            mapped = self.dscp_priority.get(self.trim.dscp)
            if mapped is not None and mapped != self.trim.priority:
                out.append(f"trim DSCP {self.trim.dscp} maps to priority {mapped} in "
                           f"dscp_priority, not the trim priority {self.trim.priority}")
        for dscp, prio in self.dscp_priority.items():
            if not 0 <= dscp < 64:
                out.append(f"DSCP must be 0..63, got {dscp}")
            if not 0 <= prio < 8:
                out.append(f"priority of DSCP {dscp} must be 0..7, got {prio}")
        if self.pfc is not None:
            reachable = {0, *self.dscp_priority.values()}
            unused = sorted(set(self.pfc.priorities) - reachable)
            if unused:
                out.append(f"PFC on priority {unused} but no DSCP maps to it (dscp_priority "
                           f"{dict(self.dscp_priority)}): PFC would never act")
        return out

    def check(self) -> CongestionConfig:
        problems = self.problems()
        if problems:
            raise CongestionConfigError("; ".join(problems))
        return self


# ---- P4Runtime entities ----------------------------------------------------------------------
def _no_action_default(schema: Schema, table: str) -> Entity:
    entity = Entity()
    entity.table_entry.table_id = schema.table(table).preamble.id
    entity.table_entry.is_default_action = True
    entity.table_entry.action.action.action_id = schema.action("NoAction").preamble.id
    return entity


def _clone_session(port: int) -> Entity:
    entity = Entity()
    session = entity.packet_replication_engine_entry.clone_session_entry
    session.session_id = PFC_SESSION_BASE + port
    session.replicas.add(egress_port=port, instance=1)
    return entity


def table_entities(schema: Schema, ports: Iterable[int], config: CongestionConfig) -> list[Entity]:
    """The entries `config` puts into the congestion tables of a switch with `ports`."""
    config.check()
    out = []
    if config.ecn is not None:
        out += [knob_entry(schema, ECN_KNOB, [(lo, hi)], {"threshold": threshold}, priority=1)
                for lo, hi, threshold in config.ecn.ranges()]
    out += [knob_entry(schema, CLASS_KNOB, [dscp], {"prio": prio})
            for dscp, prio in sorted(config.classes.items())]
    if config.trim is not None:
        trim = config.trim
        trimmed = sorted(ports) if config.trim_ports is None else sorted(config.trim_ports)
        out += [knob_entry(schema, TRIM_KNOB, [p, c],
                           {"depth": trim.depth, "payload_bytes": trim.payload_bytes,
                            "dscp": trim.dscp, "priority": trim.priority})
                for p in trimmed for c in sorted(set(trim.classes))]
    if config.pfc is not None:
        enabled = sorted(ports) if config.pfc_ports is None else sorted(config.pfc_ports)
        out += _pfc_queue_entities(schema, enabled, config.pfc)
        out += [knob_entry(schema, QUANTUM_KNOB, [p], {"us_q10": config.pfc.quantum_us_q10})
                for p in sorted(ports)]
    return out


def _pfc_queue_entities(schema: Schema, ports: Iterable[int], config: PfcConfig) -> list[Entity]:
    """pfc_config and pfc_propagation entries for the lossless queues of `ports`."""
    queues = [(p, prio) for p in ports for prio in sorted(config.priorities)]
    out = [knob_entry(schema, XOFF_XON_KNOB, [p, prio],
                      {"xoff_packets": config.xoff, "xon_packets": config.xon,
                       "quanta": config.quanta, "refresh": config.refresh_us})
           for p, prio in queues]
    out += [knob_entry(schema, PROPAGATION_KNOB, [p, prio],
                       {"xoff_packets": config.paused_threshold, "quanta": config.quanta,
                        "refresh": config.refresh_us})
            for p, prio in queues]
    return out


class _Client(Protocol):
    def read(self, entities: Iterable[Entity]) -> list[Entity]: ...
    def write(self, updates: Sequence[Update]) -> None: ...


def _updates(kind: int, entities: Iterable[Entity]) -> list[Update]:
    out = []
    for entity in entities:
        update = Update(type=kind)
        update.entity.CopyFrom(entity)
        out.append(update)
    return out


def configure_switch(client: _Client, schema: Schema, ports: Iterable[int],
                     config: CongestionConfig) -> int:
    """Replace one switch's congestion entries with `config`'s; returns the entries written."""
    ports = sorted(ports)
    wanted = table_entities(schema, ports, config)
    wildcard = []
    for knob in OWNED_KNOBS:
        entity = Entity()
        entity.table_entry.table_id = schema.table(knob.table).preamble.id
        wildcard.append(entity)
    existing = [e for e in client.read(wildcard) if not e.table_entry.is_default_action]
    client.write(_updates(Update.DELETE, existing))
    client.write(_updates(Update.INSERT, wanted))
    rx_default = (knob_default(schema, PUNT_KNOB, {}) if config.punt_pfc
                  else _no_action_default(schema, PUNT_KNOB.table))
    client.write(_updates(Update.MODIFY, [rx_default]))
    sessions = Entity()
    sessions.packet_replication_engine_entry.clone_session_entry.SetInParent()
    have = {e.packet_replication_engine_entry.clone_session_entry.session_id
            for e in client.read([sessions])}
    inserts = [_clone_session(p) for p in ports if PFC_SESSION_BASE + p not in have]
    client.write(_updates(Update.INSERT, inserts))
    return len(wanted)


class _Fabric(Protocol):  # controller.fabric.FabricController
    spec: FabricSpec
    schema: Schema

    @property  # read-only here, so a dict of a _Client subtype fits
    def clients(self) -> Mapping[str, _Client]: ...


def apply_congestion(ctl: _Fabric, config: CongestionConfig,
                     switches: Iterable[str] | None = None) -> dict[str, int]:
    """Apply `config` to every connected switch (or the named ones); entries written per switch.
    Errors from all switches are collected and raised together."""
    config.check()
    written, errors = {}, []
    for name in switches if switches is not None else list(ctl.clients):
        try:
            ports = ctl.spec.ports(name)
            written[name] = configure_switch(ctl.clients[name], ctl.schema, ports, config)
        except Exception as err:  # reported below, together with the other switches
            errors.append(f"switch {name}: {err}")
    if errors:
        raise RuntimeError("congestion settings failed on " + "\n".join(errors))
    return written


def set_port_pfc(client: _Client, schema: Schema, port: int, pfc: PfcConfig, *,
                 enabled: bool) -> None:
    """Turn `pfc` generation and propagation for one egress port off or on again; what the
    watchdog does to a stormed queue so that it stops pausing its upstream."""
    wanted = _pfc_queue_entities(schema, [port], pfc)
    keys = []
    for entity in wanted:
        key = Entity()
        key.CopyFrom(entity)
        key.table_entry.ClearField("action")
        keys.append(key)
    present = [key for key in keys if client.read([key])]
    client.write(_updates(Update.DELETE, present))
    if enabled:
        client.write(_updates(Update.INSERT, wanted))
