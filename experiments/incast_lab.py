"""A small leaf-spine on Mininet + p4switch for congestion experiments, with the switch queues
(not the kernel) as the bottleneck, so ECN and PFC see them.

    spec, roles = incast_fabric(senders=3)
    with CongestionLab(spec, host_pps=250, fabric_pps=1000) as lab:
        lab.configure(CongestionConfig(ecn=EcnProfile(5, 20, 0.2)))
        lab.agent(roles.receiver) ...

Links carry no tc shaping (rate, delay and queue None in the model): each switch port's queue
gets `set_queue_rate` (host-facing ports `host_pps`, switch-to-switch ports `fabric_pps`) and
`set_queue_depth`. Switches run with 8 priority queues (RoCE data on 3, CNPs/ACKs on 6, PFC
frames on 0) and, on p4switch, `--pfc-link-mbps`, the rate PFC quanta refer to, which the
senders and the P4 program's pause estimate share.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

from controller.congestion import ROCE_CLASSES, CongestionConfig, apply_congestion
from controller.fabric import FabricController
from controller.pfc_agent import PauseAgents, RuntimeChannel
from controller.pipeline import build_pipeline
from topos import FabricSpec, build_fabric
from topos.mininet.targets import BMV2, Target
from topos.relocate import prefixed
from traffic.agent import Agent
from traffic.hosts import MininetHost

PROGRAM = Path(__file__).resolve().parents[1] / "p4src" / "ecmp.p4"
DATA_PRIORITY = 3


@dataclass(frozen=True)
class IncastRoles:
    senders: tuple[str, ...]  # NIC names on the first leaf
    receiver: str  # first NIC of the second leaf
    victim_src: str  # on the first leaf, beside the senders
    victim_dst: str  # on the second leaf, beside the receiver
    congested: tuple[str, int]  # (switch, port) towards the receiver
    victim_port: tuple[str, int]  # (switch, port) towards the victim's destination
    spine_down: tuple[str, int]  # the spine's port to the second leaf (shared upstream)
    leaf_up: tuple[str, int]  # the first leaf's port to the spine (shared upstream)

    def watched(self) -> list[tuple[str, int, int]]:
        """The data queues worth sampling, (switch, port, priority)."""
        return [(*end, DATA_PRIORITY) for end in
                (self.congested, self.victim_port, self.spine_down, self.leaf_up)]


def incast_fabric(senders: int = 3, *, prefix: str = "ic", grpc_base: int = 48559,
                  thrift_base: int = 48090) -> tuple[FabricSpec, IncastRoles]:
    """Two leaves and one spine without kernel shaping; `senders` + 1 NICs per leaf. Names
    start with `prefix` and management ports sit at the given bases, apart from `fabric-lab up`
    fabrics (the tests use another prefix and range)."""
    if senders < 1:
        raise ValueError(f"an incast needs at least one sender, got {senders}")
    per_leaf = senders + 1
    spec = prefixed(build_fabric("leafspine", leaves=2, spines=1, hosts_per_leaf=per_leaf,
                                 rate_mbps=None, delay_ms=None, queue_pkts=None),
                    prefix, grpc_base, thrift_base)
    nics = [nic.name for nic in spec.host_nics()]
    first, second = nics[:per_leaf], nics[per_leaf:]
    leaf0, leaf1, spine = (f"{prefix}leaf0", f"{prefix}leaf1", f"{prefix}spine0")
    roles = IncastRoles(
        senders=tuple(first[:senders]), receiver=second[0], victim_src=first[senders],
        victim_dst=second[1],
        congested=(leaf1, spec.port_to(leaf1, second[0])),
        victim_port=(leaf1, spec.port_to(leaf1, second[1])),
        spine_down=(spine, spec.port_to(spine, leaf1)),
        leaf_up=(leaf0, spec.port_to(leaf0, spine)))
    return spec, roles


def p4switch_target(link_mbps: float, priority_queues: int = 8) -> Target:
    """p4switch with priority queues and the PFC link rate (its argv prefix carries both)."""
    return Target("p4switch", ("p4switch", "--priority-queues", str(priority_queues),
                               "--pfc-link-mbps", f"{link_mbps:g}"))


@dataclasses.dataclass(frozen=True)
class _Bmv2WithQueues(Target):
    """BMv2 with priority queues, a target option that goes after `--`."""

    priority_queues: int = 8

    def argv(self, *args, **kwargs) -> list[str]:
        return [*super().argv(*args, **kwargs), "--priority-queues", str(self.priority_queues)]


def bmv2_target(priority_queues: int = 8) -> Target:
    return _Bmv2WithQueues(BMV2.name, BMV2.command, BMV2.requires,
                           BMV2.cpu_port_after_separator, priority_queues)


class CongestionLab:
    """Mininet fabric + switches + routes + queue rates; congestion knobs and host agents.

    On p4switch the traffic manager honours PFC frames. On BMv2 (`target="bmv2"`) the frames
    are punted to the controller and `PauseAgents` emulate the pause by slowing the queue to
    `paused_share` of its rate (see controller/pfc_agent.py for why BMv2 cannot stop it)."""

    def __init__(self, spec: FabricSpec, *, host_pps: int, fabric_pps: int, depth: int = 64,
                 link_mbps: float = 10.0, log_dir: Path | None = None,
                 program: Path = PROGRAM, target: str = "p4switch",
                 paused_share: float = 0.1) -> None:
        if target not in ("p4switch", "bmv2"):
            raise ValueError(f"target must be p4switch or bmv2, got {target!r}")
        self.spec, self.host_pps, self.fabric_pps, self.depth = spec, host_pps, fabric_pps, depth
        self.link_mbps = link_mbps
        self.target = target
        self.paused_share = paused_share
        self.pause_agents: PauseAgents | None = None
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="fabric-lab-congestion-"))
        self.program = program
        self.net = None
        self.ctl: FabricController | None = None
        self.channels: dict[str, RuntimeChannel] = {}
        self._agent_channels: dict[str, RuntimeChannel] = {}  # the pause agents' own
        self._agents: list[Agent] = []

    def start(self) -> CongestionLab:
        from topos.mininet import FabricNetwork

        pipeline = build_pipeline(self.program, self.target)
        target = p4switch_target(self.link_mbps) if self.target == "p4switch" else bmv2_target()
        self.net = FabricNetwork(self.spec, target, log_dir=self.log_dir)
        try:
            self.net.start()
            self.ctl = FabricController(self.spec, pipeline)
            self.ctl.connect()
            self.ctl.program()
            self.channels = {sw.name: RuntimeChannel(self.target, sw.thrift_port)
                             for sw in self.spec.switches}
            self.set_queues()
        except BaseException:
            self.stop()
            raise
        return self

    def port_rate(self, switch: str, port: int) -> int:
        far = next(ln.other(switch).node for ln in self.spec.links_of(switch)
                   if ln.end(switch).port == port)
        return self.fabric_pps if self.spec.is_switch(far) else self.host_pps

    def set_queues(self) -> None:
        for sw in self.spec.switches:
            lines = []
            for port in sorted(self.spec.ports(sw.name)):
                lines += [f"set_queue_depth {self.depth} {port}",
                          f"set_queue_rate {self.port_rate(sw.name, port)} {port}"]
            self.channels[sw.name].batch(lines)

    def configure(self, config: CongestionConfig) -> dict[str, int]:
        """Apply `config`; without a DSCP map of its own it gets ROCE_CLASSES (these switches
        run 8 priority queues). On BMv2, PFC frames go to the pause agents."""
        if not config.dscp_priority:
            config = dataclasses.replace(config, dscp_priority=ROCE_CLASSES)
        if self.target == "bmv2":
            config = dataclasses.replace(config, punt_pfc=True)
            if self.pause_agents is None:
                self._agent_channels = {sw.name: RuntimeChannel(self.target, sw.thrift_port)
                                        for sw in self.spec.switches}
                self.pause_agents = PauseAgents(
                    self.ctl, self._agent_channels, self.link_mbps * 1e6,
                    lambda switch, port, _prio: self.port_rate(switch, port),
                    self.paused_share).start()
        return apply_congestion(self.ctl, config)

    def agent(self, nic: str) -> Agent:
        """A traffic worker in the NIC's namespace (closed by stop())."""
        agent = Agent(MininetHost(self.net.host(nic)))
        self._agents.append(agent)
        return agent

    def iface(self, nic: str) -> str:
        return self.spec.links_of(nic)[0].end(nic).intf

    def ip(self, nic: str) -> str:
        return next(n.ip for n in self.spec.host_nics() if n.name == nic)

    def stop(self) -> None:
        if self.pause_agents is not None:
            self.pause_agents.stop()
            self.pause_agents = None
        for agent in self._agents:
            agent.close()
        self._agents.clear()
        for ch in [*self.channels.values(), *self._agent_channels.values()]:
            ch.close()
        self.channels.clear()
        self._agent_channels.clear()
        if self.ctl is not None:
            self.ctl.close()
        if self.net is not None:
            self.net.stop()
        self.net = self.ctl = None

    def __enter__(self) -> CongestionLab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
