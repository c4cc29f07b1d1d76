"""A small fabric on Mininet + p4switch (or BMv2) for congestion experiments, with the switch
queues (not the kernel) as the bottleneck, so ECN, PFC and the hosts' congestion control see
them. The incast and cc-compare experiments build their fabrics on it.

    with CongestionLab(spec, host_pps=2400, fabric_pps=9600, link_mbps=20) as lab:
        lab.configure(CongestionConfig(ecn=EcnProfile(5, 20, 0.2)))
        lab.agent(nic) ...

Links carry no tc shaping (rate, delay and queue None in the model): each switch port's queue
gets `set_queue_rate` (host-facing ports `host_pps`, switch-to-switch ports `fabric_pps`) and
`set_queue_depth` (host-facing `depth`, switch-to-switch `fabric_depth`, by default `depth`).
Switches run with 8 priority queues (RoCE data on 3, CNPs/ACKs on 6, PFC frames on 0) and,
where the traffic manager pauses (p4switch), the link rate PFC quanta refer to, which the
senders and the P4 program's pause estimate share (`Target.with_queues`).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from controller.congestion import ROCE_CLASSES, CongestionConfig, apply_congestion
from controller.pfc_agent import PauseAgents
from experiments.framework.session import FabricSession, SessionLab
from mechanisms import program_path
from targets import RuntimeCli, Target, get_target
from topos import FabricSpec
from traffic.agent import Agent

if TYPE_CHECKING:
    from topos.mininet.cluster import ClusterOptions

PROGRAM = program_path("ecmp")
DATA_PRIORITY = ROCE_CLASSES[26]  # the queue RoCE data (DSCP 26) waits in: 3


class CongestionLab(SessionLab):
    """A `FabricSession` with queue rates on every port; congestion knobs and host agents.

    On p4switch the traffic manager honours PFC frames. On a target that cannot pause queues
    (`target="bmv2"`) the frames are punted to the controller and `PauseAgents` emulate the
    pause by slowing the queue to `paused_share` of its rate (see controller/pfc_agent.py for
    why BMv2 cannot stop it)."""

    def __init__(self, spec: FabricSpec, *, host_pps: int, fabric_pps: int, depth: int = 64,
                 fabric_depth: int | None = None, link_mbps: float = 10.0,
                 log_dir: Path | None = None,
                 program: Path = PROGRAM, target: Target | str = "p4switch",
                 paused_share: float = 0.1, cluster: ClusterOptions | None = None) -> None:
        self.spec, self.host_pps, self.fabric_pps, self.depth = spec, host_pps, fabric_pps, depth
        self.fabric_depth = fabric_depth or depth
        self.link_mbps = link_mbps
        self.target = get_target(target)
        self.paused_share = paused_share
        self.pause_agents: PauseAgents | None = None
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="fabric-lab-congestion-"))
        self.program = program
        self.channels: dict[str, RuntimeCli] = {}
        self.session = FabricSession(spec, program=program, log_dir=self.log_dir,
                                     target=self.target.with_queues(8, link_mbps), cluster=cluster,
                                     setup={"queue rates": self._open_queues})

    def _open_queues(self, _session: FabricSession):
        """One runtime-CLI client per switch, the queues set through it; closed at the end."""
        self.channels = {sw.name: self.target.cli(sw.thrift_port, 5.0)
                         for sw in self.spec.switches}
        self.set_queues()
        return lambda: self._close(self.channels)

    @staticmethod
    def _close(channels: dict[str, RuntimeCli]) -> None:
        for ch in channels.values():
            ch.close()
        channels.clear()

    def _to_switch(self, switch: str, port: int) -> bool:
        far = next(ln.other(switch).node for ln in self.spec.links_of(switch)
                   if ln.end(switch).port == port)
        return self.spec.is_switch(far)

    def port_rate(self, switch: str, port: int) -> int:
        return self.fabric_pps if self._to_switch(switch, port) else self.host_pps

    def port_depth(self, switch: str, port: int) -> int:
        return self.fabric_depth if self._to_switch(switch, port) else self.depth

    def set_queues(self) -> None:
        for sw in self.spec.switches:
            lines = []
            for port in sorted(self.spec.ports(sw.name)):
                lines += [f"set_queue_depth {self.port_depth(sw.name, port)} {port}",
                          f"set_queue_rate {self.port_rate(sw.name, port)} {port}"]
            self.channels[sw.name].batch(lines)

    def configure(self, config: CongestionConfig) -> dict[str, int]:
        """Apply `config`; without a DSCP map of its own it gets ROCE_CLASSES (these switches
        run 8 priority queues). Where queues cannot pause (BMv2), PFC frames go to the pause
        agents."""
        if not config.dscp_priority:
            config = dataclasses.replace(config, dscp_priority=ROCE_CLASSES)
        if not self.target.caps.can_pause_queues:
            config = dataclasses.replace(config, punt_pfc=True)
            if self.pause_agents is None:
                channels = {sw.name: self.target.cli(sw.thrift_port, 5.0)  # the agents' own
                            for sw in self.spec.switches}
                self.session.on_stop(lambda: self._close(channels))
                self.pause_agents = PauseAgents(
                    self.ctl, channels, self.link_mbps * 1e6,
                    lambda switch, port, _prio: self.port_rate(switch, port),
                    self.paused_share).start()
                self.session.on_stop(self._stop_pause_agents)
        return apply_congestion(self.session.connected(), config)

    def agent(self, nic: str) -> Agent:
        """A traffic worker in the NIC's namespace (closed when the lab stops)."""
        return self.session.agent(nic)

    def iface(self, nic: str) -> str:
        return self.spec.links_of(nic)[0].end(nic).intf

    def ip(self, nic: str) -> str:
        return next(n.ip for n in self.spec.host_nics() if n.name == nic)

    def _stop_pause_agents(self) -> None:
        if self.pause_agents is not None:
            self.pause_agents.stop()
            self.pause_agents = None

