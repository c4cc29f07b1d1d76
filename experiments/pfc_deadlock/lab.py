"""The ring on Mininet + p4switch with PFC, its routes, traffic, the watchdog and the samples.

    with DeadlockLab(spec, params, log_dir) as lab:
        lab.configure_pfc()                      # PFC on priority 3, pauses held (pfc_hold)
        lab.install(clockwise_routes(spec, compute_routes(spec)))
        rows, t0 = lab.drive(agents, lab.ring_flows(), pps, send_s, hold_s)
        lab.watchdog("drop", 400, 400)           # p4switch's traffic manager watchdog on
        lab.watchdog_events()                    # every switch's detections, restorations

Queues, not links, set the rates: ring ports drain `ring_pps`, host ports `host_pps`; every
host sends `flow_pps` to the host two switches on, so each ring queue is offered two flows,
more than it drains. PFC quanta count 512 bit times at `link_mbps`; every switch holds the
pauses it sent while a queue holding the paused port's traffic is deeper than `hold` packets
(`pfc_hold`, p4switch/switch/pfc.py). About 14,400 packet-hops/s (4 flows x 1200 frames/s x 3
switches), within docs/rates.md's budget.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.congestion import ROCE_CLASSES, CongestionConfig, PfcConfig, apply_congestion
from controller.routes import SwitchRoutes
from controller.sync import sync_switch
from experiments.framework.session import FabricSession, SessionLab
from experiments.framework.telemetry import TelemetrySampler
from experiments.pfc_deadlock.ring import clockwise
from mechanisms import program_path
from mechanisms.pfc import STATE_REGISTERS
from targets import RuntimeCli, Target, get_target
from topos import FabricSpec
from traffic.agent import Agent
from traffic.sender_config import QueuePairConfig, SenderConfig

DATA_PRIORITY = 3
FRAME_BITS = 1082 * 8  # a 1024-byte RoCEv2 WRITE on the wire


class DeadlockLab(SessionLab):
    """A `FabricSession` over the ring with queue rates, PFC and one traffic worker per host."""

    def __init__(self, spec: FabricSpec, params: Mapping[str, Any], log_dir: Path,
                 target: Target | str = "p4switch") -> None:
        self.spec, self.params = spec, params
        self.target = get_target(target)
        self.channels: dict[str, RuntimeCli] = {}
        self.session = FabricSession(
            spec, program=program_path("ecmp"), log_dir=log_dir,
            # the PFC watchdog and pause hold are in the Python traffic manager, which the
            # native pipeline runs on (the C data plane has neither)
            target=self.target.with_queues(8, params["link_mbps"]).with_options(
                "--pipeline", "native"),
            setup={"queue rates": self._open_queues})

    # ---- bring-up ----------------------------------------------------------------------
    def _open_queues(self, _session: FabricSession):
        self.channels = {sw.name: self.target.cli(sw.thrift_port, 5.0)
                         for sw in self.spec.switches}
        for sw in self.spec.switches:
            lines = []
            for port in sorted(self.spec.ports(sw.name)):
                ring = self.spec.is_switch(self._far(sw.name, port))
                lines += [f"set_queue_depth {self.params['depth']} {port}",
                          f"set_queue_rate {self.params['ring_pps' if ring else 'host_pps']} "
                          f"{port}"]
            self.channels[sw.name].batch(lines)
        return self._close

    def _close(self) -> None:
        for ch in self.channels.values():
            ch.close()
        self.channels.clear()

    def _far(self, switch: str, port: int) -> str:
        return next(ln.other(switch).node for ln in self.spec.links_of(switch)
                    if ln.end(switch).port == port)

    def configure_pfc(self) -> None:
        p = self.params
        apply_congestion(self.session.connected(), CongestionConfig(
            pfc=PfcConfig(p["xoff"], p["xon"], p["quanta"], p["refresh_us"], p["link_mbps"]),
            dscp_priority=ROCE_CLASSES))
        for ch in self.channels.values():  # a MAC holds XOFF while its buffer is full
            ch.command(f"pfc_hold {p['hold']}")

    def install(self, plan: Mapping[str, SwitchRoutes]) -> None:
        """Write `plan` to every switch (only what differs from what it holds)."""
        ctl = self.session.connected()
        for name, client in ctl.clients.items():
            sync_switch(client, ctl.intent, plan[name])

    # ---- what is watched -----------------------------------------------------------------
    def ring_queues(self) -> list[tuple[str, int, int]]:
        """The clockwise ring queues, (switch, port, priority): the cycle of the deadlock."""
        return [(sw.name, self.spec.port_to(sw.name, clockwise(self.spec, sw.name)),
                 DATA_PRIORITY) for sw in self.spec.switches]

    def nic_of(self, switch: str) -> str:
        return next(n.name for n in self.spec.host_nics()
                    if self.spec.attachments(n.name)[0][0] == switch)

    def agent(self, nic: str) -> Agent:
        return self.session.agent(nic)

    # ---- traffic -------------------------------------------------------------------------
    def ring_flows(self) -> list[tuple[str, str]]:
        """(source NIC, destination NIC): every host to the host two switches on."""
        nics = [self.nic_of(sw.name) for sw in self.spec.switches]
        return [(src, nics[(i + 2) % len(nics)]) for i, src in enumerate(nics)]

    def incast_flows(self) -> list[tuple[str, str]]:
        """Every other host to the first switch's host."""
        nics = [self.nic_of(sw.name) for sw in self.spec.switches]
        return [(src, nics[0]) for src in nics[1:]]

    def drive(self, agents: Mapping[str, Agent], flows: list[tuple[str, str]], pps: int,
              send_s: float, hold_s: float) -> tuple[list[dict], float]:
        """Each flow sends `pps` lossless frames for `send_s`, then nothing for `hold_s`; the
        ring queues are sampled throughout. Returns the samples (t_s from the senders' start)
        and that start (epoch s)."""
        p = self.params
        sampler = TelemetrySampler(self.channels, self.ring_queues(), target=self.target,
                                   interval_s=p["sample_ms"] / 1000).start()
        try:
            t_start = time.time() + 0.3
            for i, (src, dst) in enumerate(flows):
                agents[src].start_send(SenderConfig(
                    iface=self._iface(src), link_bps=p["link_mbps"] * 1e6, start_at=t_start,
                    duration_s=send_s, dcqcn=False, go_back_n=False,
                    qps=[QueuePairConfig(self._ip(dst), 0x300 + i, rate_bps=pps * FRAME_BITS,
                                         messages=None)]))
            for src, _dst in flows:
                agents[src].result(send_s + 30)
            time.sleep(max(0.0, t_start + send_s + hold_s - time.time()))
        finally:
            rows = sampler.stop()
        if sampler.errors:
            raise RuntimeError(f"telemetry failed: {sampler.errors[0]}")
        offset = t_start - sampler.t0
        for row in rows:
            row["t_s"] = round(row["t_s"] - offset, 4)
        return rows, t_start

    def _iface(self, nic: str) -> str:
        return self.spec.links_of(nic)[0].end(nic).intf

    def _ip(self, nic: str) -> str:
        return next(n.ip for n in self.spec.host_nics() if n.name == nic)

    # ---- the watchdog (p4switch's traffic manager) ---------------------------------------
    def watchdog(self, action: str | None, detection_ms: int = 200,
                 restoration_ms: int = 400) -> None:
        """The traffic manager's PFC watchdog on every switch (None: off)."""
        line = ("pfc_watchdog off" if action is None else
                f"pfc_watchdog {detection_ms} {restoration_ms} {action}")
        for ch in self.channels.values():
            ch.command(line)

    def watchdog_events(self) -> list[dict[str, Any]]:
        """Every switch's watchdog events: switch, kind, t (monotonic s), port, dropped."""
        out = []
        for name, ch in self.channels.items():
            for line in ch.command("pfc_watchdog_stats").splitlines():
                words = line.split()
                if words[:1] == ["event"]:
                    out.append({"switch": name, "kind": words[1], "t": float(words[3]),
                                "port": int(words[5]), "priority": int(words[7]),
                                "dropped": int(words[9])})
        return sorted(out, key=lambda e: e["t"])

    def drain(self, timeout_s: float = 10.0) -> None:
        """Before the next trial: empty every ring queue (a short-fused watchdog, then off),
        end every pause and zero the program's PFC state."""
        self.watchdog("drop", 20, 20)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(self.channels[sw].queue_stats(port, prio)["depth"] == 0
                   for sw, port, prio in self.ring_queues()):
                break
            time.sleep(0.05)
        time.sleep(0.1)
        self.watchdog(None)
        for sw in self.spec.switches:
            self.channels[sw.name].batch(
                [f"queue_resume {port} {DATA_PRIORITY}" for port in self.spec.ports(sw.name)]
                + [f"register_reset {name}" for name in STATE_REGISTERS])
