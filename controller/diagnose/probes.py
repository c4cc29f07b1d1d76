"""Diagnose probes: RoCEv2 SEND frames asking every switch for its INT record, sent in short
bursts between the fabric's own NICs, and what of them arrived.

A plan gives each source NIC `flows` flows (UDP source ports, the entropy ECMP hashes on) to each
destination, and each flow `rounds` bursts of `burst` frames back to back, a source's bursts
`gap_s` apart (a light load: 4 frames per 50 ms, 0.8 Mb/s per source). The bursts make a queue
where an egress serves slower than its link, so consecutive records there show the rate it
really serves at (`findings`). The frames are full-size (1024 payload bytes: a port shaped in
packets per second serves them as it serves the lab's RoCE data) and use DSCP 26, the lossless
data class, so they wait in the queues data waits in.

    plan = ProbePlan.between(spec, ["h0", "h1", "h2"])
    result = run_probes(spec, plan, hosts)      # hosts: NIC name -> traffic.hosts.Host
    result.lost(), result.arrived()              # probes that never came, and their records
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from topos.errors import FabricLabError
from topos.model import FabricSpec
from traffic.frames import Endpoints, FrameTemplate, add_int_shim, build_frame
from traffic.headers import INT_IP_PROTO, INT_MAX_HOPS, ROCE_UDP_PORT, SEND_ONLY, TAG_IP_PROTO
from traffic.hosts import Host, python_argv
from traffic.inband import IntReport, strip_int
from traffic.wire import PLAIN

MARKER = b"fabric-lab diagnose "
PROBE_QPN = 0xD1A6
PAYLOAD_BYTES = 1024
SPORT_BASE = 49500
FLOWS_BUDGET = 100  # flows of a default plan: 12 probes each, ~1.2k frames through the fabric


class ProbeError(FabricLabError, RuntimeError):
    """A probe agent that did not start, or answered what is not its protocol."""


@dataclass(frozen=True)
class Flow:
    src: str  # NIC names
    dst: str
    sport: int


@dataclass
class Probe:
    """One probe frame: its flow, when it was sent (round, index in the burst), what arrived."""

    flow: Flow
    round: int
    index: int
    report: IntReport | None = None
    sent: bool = True  # False: the source's interface refused it

    @property
    def arrived(self) -> bool:
        return self.report is not None


@dataclass
class ProbePlan:
    flows: list[Flow]
    rounds: int = 3
    burst: int = 4
    gap_s: float = 0.05

    @classmethod
    def between(cls, spec: FabricSpec, nics: Sequence[str] | None = None, *,
                flows: int | None = None, rounds: int = 3, burst: int = 4,
                gap_s: float = 0.05) -> ProbePlan:
        """Every NIC of `nics` (default: all) to every other, `flows` source ports each
        (default: 4, fewer when there are many pairs: about FLOWS_BUDGET flows in all)."""
        names = list(nics) if nics is not None else [n.name for n in spec.host_nics()]
        unknown = [n for n in names if n not in {nic.name for nic in spec.host_nics()}]
        if unknown:
            raise ProbeError(f"not NICs of {spec.name}: {', '.join(unknown)}")
        if len(names) < 2:
            raise ProbeError("probes need at least two NICs")
        pairs = len(names) * (len(names) - 1)
        flows = flows or max(1, min(4, FLOWS_BUDGET // max(1, pairs)))
        out = [Flow(src, dst, SPORT_BASE + k) for src in names for dst in names if dst != src
               for k in range(flows)]
        return cls(out, rounds=rounds, burst=burst, gap_s=gap_s)

    @property
    def sources(self) -> list[str]:
        return sorted({f.src for f in self.flows})


@dataclass
class ProbeResult:
    probes: list[Probe]
    sent: dict[str, int] = field(default_factory=dict)  # per source NIC: frames it sent
    seconds: float = 0.0

    def arrived(self) -> list[Probe]:
        return [p for p in self.probes if p.arrived]

    def lost(self) -> list[Probe]:
        """Probes sent that never arrived."""
        return [p for p in self.probes if p.sent and not p.arrived]


class Frames:
    """Probe frames of one fabric: one frame per NIC pair built (scapy), each flow's source port
    and each probe's id and PSN patched into it (`traffic.frames.FrameTemplate` keeps the ICRC
    right), then the INT shim added."""

    def __init__(self, spec: FabricSpec, marker: bytes = MARKER) -> None:
        self.spec, self.marker = spec, marker
        self._pairs: dict[tuple[str, str], bytes] = {}

    def _pair(self, src_nic: str, dst_nic: str) -> bytes:
        if (src_nic, dst_nic) not in self._pairs:
            src, dst = self.spec.nic(src_nic), self.spec.nic(dst_nic)
            ep = Endpoints(src_mac=src.mac, dst_mac=dst.mac, src_ip=src.ip, dst_ip=dst.ip,
                           sport=SPORT_BASE, dqpn=PROBE_QPN)
            self._pairs[(src_nic, dst_nic)] = build_frame(ep, SEND_ONLY,
                                                          payload=bytes(PAYLOAD_BYTES))
        return self._pairs[(src_nic, dst_nic)]

    def template(self, flow: Flow) -> FrameTemplate:
        frame = bytearray(self._pair(flow.src, flow.dst))
        frame[PLAIN.sport] = flow.sport.to_bytes(2, "big")
        return FrameTemplate(bytes(frame), stamped=False)

    def probe(self, template: FrameTemplate, probe_id: int) -> bytes:
        payload = (self.marker + probe_id.to_bytes(4, "big")).ljust(template.payload_len, b"\0")
        return add_int_shim(template.render(probe_id, payload=payload), INT_MAX_HOPS)


def _bursts(frames: Frames, plan: ProbePlan, src: str, probes: list[Probe]) -> list[list[str]]:
    """The source's frames, one burst per flow per round (hex), its probes appended (in the
    order of the frames)."""
    templates = {f: frames.template(f) for f in plan.flows if f.src == src}
    bursts = []
    for rnd in range(plan.rounds):
        for flow, template in templates.items():
            burst = []
            for index in range(plan.burst):
                probes.append(Probe(flow, rnd, index))
                burst.append(frames.probe(template, len(probes) - 1).hex())
            bursts.append(burst)
    return bursts


def decode(frame: bytes, marker: bytes = MARKER) -> tuple[int, IntReport] | None:
    """(probe id, INT report) of a received probe frame cut after its id, None if no INT."""
    at = frame.find(marker)
    if at < 0:
        return None
    probe_id = int.from_bytes(frame[at + len(marker): at + len(marker) + 4], "big")
    _, report = strip_int(frame)
    return None if report is None else (probe_id, report)


class _Agent:
    def __init__(self, host: Host, ifaces: list[str]) -> None:
        args = [arg for iface in ifaces for arg in ("--iface", iface)]
        self.proc = host.popen(python_argv("controller.diagnose.agent", *args),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        self.name = host.name

    def line(self) -> dict:
        assert self.proc.stdout is not None
        text = self.proc.stdout.readline()
        if not text:
            self.proc.wait(5)
            err = self.proc.stderr.read().strip() if self.proc.stderr else ""
            raise ProbeError(f"probe agent on {self.name} ended: {err or 'no output'}")
        return json.loads(text)

    def send(self, request: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def nic_ifaces(spec: FabricSpec, nic: str) -> list[str]:
    """The NIC's interfaces, one per port (a dual-homed NIC's probes arrive on either)."""
    return [ln.end(nic).intf for ln in spec.links_of(nic)]


def run_probes(spec: FabricSpec, plan: ProbePlan, hosts: Mapping[str, Host], *,
               idle_s: float = 1.0, max_s: float = 8.0) -> ProbeResult:
    """Send the plan's probes from every source at once, collect what every NIC received."""
    nics = sorted({f.src for f in plan.flows} | {f.dst for f in plan.flows})
    missing = [n for n in nics if n not in hosts]
    if missing:
        raise ProbeError(f"no host namespace for {', '.join(missing)}")
    probes: list[Probe] = []
    marker = MARKER + os.urandom(4)  # this run's: another diagnosis's probes are not ours
    frames = Frames(spec, marker)
    bursts = {src: _bursts(frames, plan, src, probes) for src in plan.sources}
    expect = {n: sum(1 for p in probes if p.flow.dst == n) for n in nics}
    agents: dict[str, _Agent] = {}
    started = time.monotonic()
    try:
        for nic in nics:
            agents[nic] = _Agent(hosts[nic], nic_ifaces(spec, nic))
        with ThreadPoolExecutor(max_workers=len(agents)) as pool:
            for nic, ready in zip(agents, pool.map(lambda a: a.line(), agents.values()),
                                  strict=True):
                if not ready.get("ready"):
                    raise ProbeError(f"probe agent on {nic}: unexpected {ready}")
            started = time.monotonic()
            for nic, agent in agents.items():
                agent.send({"bursts": bursts.get(nic, []), "gap_s": plan.gap_s,
                            "expect": expect[nic], "idle_s": idle_s, "max_s": max_s,
                            "marker": marker.hex(), "udp_port": ROCE_UDP_PORT,
                            "sink_protos": [TAG_IP_PROTO, INT_IP_PROTO]})
            answers = dict(zip(agents, pool.map(lambda a: a.line(), agents.values()),
                               strict=True))
    finally:
        for agent in agents.values():
            agent.close()
    for nic, answer in answers.items():
        mine = [p for p in probes if p.flow.src == nic]  # in the order they were sent
        for at in answer.get("unsent", []):
            mine[at].sent = False
        for text in answer["received"]:
            got = decode(bytes.fromhex(text), marker)
            if got is not None and got[0] < len(probes):
                probes[got[0]].report = got[1]
    return ProbeResult([p for p in probes if p.sent or p.arrived],
                       {n: a["sent"] for n, a in answers.items() if n in bursts},
                       time.monotonic() - started)
