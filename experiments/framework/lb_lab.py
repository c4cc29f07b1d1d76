"""A fabric in Mininet running one load-balancing mode, with flows to run and links to count.

    with LbLab(spec, mode="flowlet", flowlet_gap_us=20000) as lab:
        before = lab.link_counters()
        result = lab.run_flows([FlowSpec("h0n0", "h2n0", qpn=1, sport=50001, bytes=65536)],
                               rate_bps=1e6)
        loads = lab.link_counters() - before      # packets/bytes per directed link
        lab.switch_mode("dlb")                    # another program, same network

Flows run through `traffic.worker` agents in the NIC namespaces (`traffic.sender` /
`traffic.receiver`: paced RDMA WRITE messages, the receiver's reorder buffer undoes DLB
spraying using the switch's tag). Link loads come from the switches' per-port tx counters read
over P4Runtime.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.lb import LoadBalancing, program_path
from experiments.framework.session import FabricSession, SessionLab
from experiments.framework.telemetry import parse_cli_values, read_commands, reset_commands
from mechanisms.telemetry import DEPTH_MAX_ITEM, queue_cell
from topos import FabricSpec
from traffic.agent import Agent
from traffic.hosts import MininetHost

if TYPE_CHECKING:
    from topos.mininet.cluster import ClusterOptions

START_MARGIN_S = 0.05  # senders start together this long after the last request (per sender)
DirectedLink = tuple[str, str]  # (from node, to node)


@dataclass(frozen=True)
class FlowSpec:
    """One queue pair: `bytes` in one RDMA WRITE message from NIC `src` to NIC `dst`."""

    src: str
    dst: str
    qpn: int
    sport: int
    bytes: int

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst}#{self.qpn}"


@dataclass
class FlowOutcome:
    flow: FlowSpec
    start: float  # epoch s of the first packet sent
    end: float  # epoch s of the last arrival
    bytes: int  # delivered payload bytes
    lost: int
    out_of_order: int
    reorder_distance_max: int
    reorder_occupancy_max: int
    tagged: int
    packets: int
    record: dict[str, Any] = field(default_factory=dict, repr=False)  # the receiver's, raw
    sent: dict[str, Any] = field(default_factory=dict, repr=False)  # the sender's, raw

    @property
    def retransmitted_packets(self) -> int:
        return int(self.sent.get("retransmitted_packets", 0))

    @property
    def retransmitted_bytes(self) -> int:
        return int(self.sent.get("retransmitted_bytes", 0))

    @property
    def naks(self) -> int:
        return int(self.record.get("naks_sent", 0))

    @property
    def timeouts(self) -> int:
        return int(self.sent.get("timeouts", 0))

    @property
    def completion_s(self) -> float:
        return max(0.0, self.end - self.start)

    @property
    def throughput_bps(self) -> float:
        return self.bytes * 8 / self.completion_s if self.completion_s > 0 else 0.0

    @property
    def complete(self) -> bool:
        return self.bytes >= self.flow.bytes and not self.lost


@dataclass
class LinkLoads:
    """Packets and bytes per directed switch egress (from node, to node)."""

    packets: Counter = field(default_factory=Counter)
    bytes: Counter = field(default_factory=Counter)

    def __sub__(self, other: LinkLoads) -> LinkLoads:
        out = LinkLoads()
        for key in self.packets:
            out.packets[key] = self.packets[key] - other.packets.get(key, 0)
            out.bytes[key] = self.bytes[key] - other.bytes.get(key, 0)
        return out


class LbLab(SessionLab):
    """A `FabricSession` running one load-balancing program, with its knobs, flows and link
    counters."""

    def __init__(self, spec: FabricSpec, *, mode: str = "ecmp", target: str = "p4switch",
                 flowlet_gap_us: int | None = None, log_dir: Path | None = None,
                 switch_tags: bool = True, cluster: ClusterOptions | None = None) -> None:
        self.spec = spec
        self.mode = mode
        self.switch_tags = switch_tags
        self.flowlet_gap_us = flowlet_gap_us
        self.log_dir = log_dir
        self.lb: LoadBalancing | None = None
        self.session = FabricSession(spec, program=program_path(mode), target=target,
                                     log_dir=log_dir, cluster=cluster,
                                     setup={"load-balancing knobs": self._knobs})
        self.target = self.session.target.name
        self._agents: dict[tuple[str, str], Agent] = {}  # (nic, role) -> worker

    def _knobs(self, session: FabricSession) -> None:
        self.lb = LoadBalancing(session.connected())
        self.lb.configure(self.flowlet_gap_us if self.mode == "flowlet" else None,
                          switch_tags=self.switch_tags)

    # ---- lifecycle -----------------------------------------------------------------------
    def stop(self) -> None:
        self._agents.clear()  # the session closes them
        self.session.stop()
        self.lb = None

    # ---- knobs ---------------------------------------------------------------------------
    def switch_mode(self, mode: str, flowlet_gap_us: int | None = None,
                    switch_tags: bool = True) -> None:
        """Run another load-balancing program on every switch (routes and knobs rewritten);
        `switch_tags=False`: DLB switches add no reorder tags."""
        assert self.lb is not None, "the lab is not running"  # set up by start()
        self.lb.switch_mode(mode, target=self.target, flowlet_gap_us=flowlet_gap_us,
                            switch_tags=switch_tags)
        self.mode, self.flowlet_gap_us, self.switch_tags = mode, flowlet_gap_us, switch_tags

    def runtime_cli(self, switch: str, commands: list[str]) -> str:
        """Runtime CLI commands (queue depth/rate, ...) on one switch."""
        from controller.queues import run_commands

        return run_commands(self.target, self.spec.switch(switch).thrift_port, commands)

    def set_flowlet_gap(self, gap_us: int) -> None:
        assert self.lb is not None, "the lab is not running"  # set up by start()
        self.lb.set_flowlet_gap(gap_us)
        self.flowlet_gap_us = gap_us

    # ---- counters ------------------------------------------------------------------------
    def link_counters(self) -> LinkLoads:
        """Tx packets/bytes of every switch port that faces a link, keyed (switch, neighbour)."""
        loads = LinkLoads()
        switches = [sw.name for sw in self.spec.switches]
        ctl = self.session.connected()
        counters = ctl._each(switches, lambda name: ctl.port_counters(name)[1])
        for name, tx in counters.items():
            for link in self.spec.links_of(name):
                port = link.end(name).port
                packets, nbytes = tx.get(port, (0, 0))
                key = (name, link.other(name).node)
                loads.packets[key] += packets
                loads.bytes[key] += nbytes
        return loads

    def queue_peaks(self, links: list[DirectedLink]) -> dict[DirectedLink, int]:
        """The deepest enqueue (packets) on each link's egress queue since the last call (the
        P4 program's `depth_max` telemetry register, zeroed by this read)."""
        by_switch: dict[str, dict[DirectedLink, int]] = {}
        for a, b in links:
            by_switch.setdefault(a, {})[(a, b)] = queue_cell(self.spec.port_to(a, b), 0)
        peaks = {}
        for switch, cells in by_switch.items():
            item = [DEPTH_MAX_ITEM]
            values = parse_cli_values(self.runtime_cli(
                switch, read_commands(item, cells.values()) + reset_commands(item, cells.values())))
            for link, cell in cells.items():
                peaks[link] = values[f"{DEPTH_MAX_ITEM.p4_name}[{cell}]"]
        return peaks

    def wait_idle(self, links: list[DirectedLink], interval_s: float = 0.25,
                  timeout_s: float = 15.0) -> bool:
        """Poll the tx counters of `links` until they stop growing (their queues drained,
        e.g. resends still queued behind a slow port); False if they never did."""
        deadline = time.monotonic() + timeout_s
        last = self.link_counters()
        while time.monotonic() < deadline:
            time.sleep(interval_s)  # the counters' poll interval
            now = self.link_counters()
            if all(now.packets[k] == last.packets[k] for k in links):
                return True
            last = now
        return False

    # ---- flows ---------------------------------------------------------------------------
    def host(self, nic: str) -> MininetHost:
        return self.session.host(nic)

    def _agent(self, nic: str, role: str) -> Agent:
        key = (nic, role)
        if key not in self._agents:
            self._agents[key] = self.session.agent(nic)
        return self._agents[key]

    def run_flows(self, flows: list[FlowSpec], *, rate_bps: float, mtu_payload: int = 1024,
                  timeout_s: float = 30.0, receiver: dict[str, Any] | None = None,
                  sender: dict[str, Any] | None = None,
                  qp: dict[str, Any] | None = None) -> list[FlowOutcome]:
        """Send every flow's message at once (a NIC's rate shared by its flows); wait for all.
        `receiver`, `sender`, `qp`: more settings of the receivers, senders and queue pairs."""
        ip = {nic.name: nic.ip for nic in self.spec.host_nics()}
        by_dst: dict[str, list[FlowSpec]] = {}
        by_src: dict[str, list[FlowSpec]] = {}
        for f in flows:
            by_dst.setdefault(f.dst, []).append(f)
            by_src.setdefault(f.src, []).append(f)
        for dst, fl in by_dst.items():
            self._agent(dst, "recv").start_recv({
                "iface": self.host(dst).iface, "duration_s": timeout_s, "idle_timeout_s": 3.0,
                "expect": [{"src_ip": ip[f.src], "qpn": f.qpn, "bytes": f.bytes} for f in fl],
                **(receiver or {})})
        start_at = time.time() + START_MARGIN_S * (1 + len(by_src))
        for src, fl in by_src.items():
            qps = [{"dst_ip": ip[f.dst], "qpn": f.qpn, "sport": f.sport,
                    "message_bytes": f.bytes, "messages": 1, "rate_bps": rate_bps / len(fl),
                    **(qp or {})}
                   for f in fl]
            self._agent(src, "send").start_send({
                "iface": self.host(src).iface, "qps": qps, "start_at": start_at,
                "mtu_payload": mtu_payload, "dcqcn": False, **(sender or {})})
        deadline = time.monotonic() + timeout_s + 30
        sent = {src: self._agent(src, "send").result(max(1.0, deadline - time.monotonic()))
                for src in by_src}
        got = {dst: self._agent(dst, "recv").result(max(1.0, deadline - time.monotonic()))
               for dst in by_dst}
        out = []
        for f in flows:
            tx = next((q for q in sent[f.src]["qps"]
                       if q["qpn"] == f.qpn and q["dst_ip"] == ip[f.dst]), None)
            if tx is None:
                raise RuntimeError(f"{f.name}: the sender in {f.src} reported no such queue pair")
            rx = next((q for q in got[f.dst]["qps"]
                       if q["qpn"] == f.qpn and q["src_ip"] == ip[f.src]), None)
            rx = rx or {"last_t": tx["start"], "bytes": 0, "lost": 0, "out_of_order": 0,
                        "reorder_distance_max": 0, "reorder_occupancy_max": 0, "tagged": 0,
                        "packets": 0}
            out.append(FlowOutcome(
                f, start=tx["start"], end=rx["last_t"], bytes=rx["bytes"], lost=rx["lost"],
                out_of_order=rx["out_of_order"], reorder_distance_max=rx["reorder_distance_max"],
                reorder_occupancy_max=rx["reorder_occupancy_max"], tagged=rx["tagged"],
                packets=rx["packets"], record=rx, sent=tx))
        return out
