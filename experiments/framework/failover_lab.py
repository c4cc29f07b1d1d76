"""A routed fabric with flows running and links to fail: what the failover experiment, the live
demo, `hpn_segment` and the failover tests share.

    with FailoverLab(spec) as lab:                  # a FabricSession with both loops
        flows = lab.plan_flows([("h0n0", "h3n0")], per_pair=4)
        with lab.start_flows(flows, pps=120) as run:  # run.bins: live 10 ms bins per flow
            link = lab.busiest_link(lab.candidates("uplink", flows))
            failure = Failure("uplink", lab.target_of("uplink", link))
            lab.fail(failure)                        # failure.t_fail: when
            ...
            lab.restore(failure)
        run.results                                  # per-flow receiver records

The controller reconverges on port events (`Reconverger`) and, when probes are on, isolates
links the `LinkProber` finds dropping.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from controller.probes import LinkProber
from controller.reconverge import Reconverger
from experiments.framework.flows import (
    Flow,
    FlowRun,
    close_worker,
    expect_event,
    paced_argv,
)
from experiments.framework.session import FabricSession, SessionLab
from mechanisms import program_path
from topos.mininet import failures as links
from topos.model import FabricSpec, Link

if TYPE_CHECKING:
    from targets import Target
    from topos.mininet.cluster import ClusterOptions

__all__ = ["KINDS", "LINK_MTU", "FailoverLab", "Failure", "Flow", "FlowRun", "pick_failure", "settle"]

PROGRAM = program_path("ecmp")
KINDS = ("uplink", "downlink", "tor", "silent")
TRACE_PACKETS = 40
TRACE_TRIES = 3  # traces of the same flows before a failure is chosen without one it hits
# The links' MTU for the failover flows: RoCE's 4096-byte path MTU, which Ethernet's 1500 does
# not carry (RoCE fabrics set 4200 or more). Four times fewer packets carry the same Mb/s, and
# packets, more than bytes, are what the machine's two cores pay for (docs/rates.md).
LINK_MTU = 4200


@dataclass
class Failure:
    kind: str
    target: str  # link name "a~b" or switch name
    t_fail: float = 0.0
    t_restore: float = 0.0


def relieved_pps(pps: float) -> int:
    """The per-flow rate to suggest when the switches' receive rings dropped frames at `pps`:
    half of it (docs/rates.md runs the experiments at about half the measured capacity)."""
    return max(1, round(pps / 2))


class FailoverLab(SessionLab):
    """A `FabricSession` (switches, controller, reconvergence loop, probes) with flows to run
    and links to fail."""

    def __init__(self, spec: FabricSpec, *, target: str | Target = "p4switch",
                 program: Path = PROGRAM,
                 log_dir: Path | None = None, reconverge: bool = True, probes: bool = True,
                 probe_period: float = 1.0, watch_interval: float = 0.05,
                 cluster: ClusterOptions | None = None):
        self.spec = spec
        self.cluster = cluster
        self.session = FabricSession(spec, program=program, target=target, log_dir=log_dir,
                                     cluster=cluster, reconverge=reconverge, probes=probes,
                                     probe_period=probe_period, watch_interval=watch_interval)
        self.ip_of = {nic.name: nic.ip for nic in spec.host_nics()}

    @property
    def rc(self) -> Reconverger | None:
        return self.session.rc

    @property
    def prober(self) -> LinkProber | None:
        return self.session.prober

    # ---- lifecycle -----------------------------------------------------------------------
    def start_loops(self, reconverge: bool = True, probes: bool = True) -> None:
        """Start the reconvergence loop and/or the link probes (if not running yet)."""
        self.session.start_loops(reconverge, probes)

    # ---- flows ---------------------------------------------------------------------------
    def plan_flows(self, pairs: list[tuple[str, str]], per_pair: int = 2) -> list[Flow]:
        """`per_pair` flows (queue pairs, each its own UDP source port) per (source, dest)."""
        flows = []
        for i, (src, dst) in enumerate(pairs):
            for k in range(per_pair):
                qpn = 0x100 + i * per_pair + k
                flows.append(Flow(src, dst, self.ip_of[dst], qpn, 49152 + qpn))
        return flows

    def default_pairs(self) -> list[tuple[str, str]]:
        """The first server's NICs to the last server's, rail by rail (NIC i to NIC i)."""
        first, last = self.spec.hosts[0], self.spec.hosts[-1]
        return [(a.name, b.name) for a, b in zip(first.nics, last.nics, strict=False)]

    def dual_homed(self, nic: str) -> bool:
        return len(self.spec.attachments(nic)) > 1

    def start_flows(self, flows: list[Flow], *, pps: float = 300.0, size: int = 256,
                    bin_s: float = 0.01, report_s: float = 0.1, pacer: str = "auto") -> FlowRun:
        """Receivers, then senders (`pacer`: their pacing loop, `traffic paced send
        --pacer`)."""
        run = FlowRun(flows, time.time(), bin_s)
        gap = 1.5 / pps  # a single lost packet leaves a gap of two intervals
        try:
            for dst in sorted({f.dst for f in flows}):
                argv = paced_argv("recv", "--t0", repr(run.t0),
                                   "--bin", str(bin_s), "--gap", str(gap),
                                   "--report", str(report_s))
                run.attach("recv", self._popen(dst, argv), self.ip_of)
            run.wait_ready()
            for src in sorted({f.src for f in flows}):
                argv = paced_argv("send", "--pps", str(pps), "--size", str(size),
                                  "--pacer", pacer)
                for f in flows:
                    if f.src == src:
                        argv += ["--flow", f"{f.dst_ip}:{f.qpn}:{f.sport}"]
                run.attach("send", self._popen(src, argv), self.ip_of)
            run.wait_ready()
        except BaseException:
            run.stop()
            raise
        return run

    def _popen(self, nic: str, argv: list[str]) -> subprocess.Popen:
        return self.session.host(nic).popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)

    # ---- where flows go ------------------------------------------------------------------
    def trace_paths(self, flows: list[Flow], count: int = TRACE_PACKETS,
                    timeout: float = 3.0) -> dict[str, frozenset[tuple[str, int]]]:
        """Flow name -> the (switch, egress port)s its packets leave through.

        Each flow in turn sends `count` packets alone (same 5-tuple as the flow, so the same
        ECMP and NIC-port choices); a port is on its path when its tx counter grew by at least
        half of them (controller probes and ICMP replies add a few packets elsewhere).
        Call it with no other traffic running."""
        paths = {}
        for src in sorted({f.src for f in flows}):
            mine = [f for f in flows if f.src == src]
            argv = paced_argv("trace", "--count", str(count))
            for f in mine:
                argv += ["--flow", f"{f.dst_ip}:{f.qpn}:{f.sport}"]
            proc = self.session.host(src).popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
            assert proc.stdin is not None  # stdin=PIPE
            try:
                expect_event(proc, "ready")
                for f in mine:
                    before = self._port_packets(sw.name for sw in self.spec.switches)
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                    expect_event(proc, "sent")
                    paths[f.name] = self._burst_path(f, before, count, timeout)
            finally:
                close_worker(proc)
        return paths

    def trace_crossing(self, flows: list[Flow], kinds: Iterable[str]
                       ) -> dict[str, frozenset[tuple[str, int]]]:
        """`trace_paths`, traced again (up to TRACE_TRIES times in all) while no flow crosses
        any candidate of one of `kinds`: a busy machine can keep a burst's counters from
        showing a hop, and a failure must hit a flow it was seen to carry."""
        wanted = sorted(set(kinds))
        for _ in range(TRACE_TRIES):
            paths = self.trace_paths(flows)
            if all(any(self.crosses(kind, self.target_of(kind, link), paths[f.name])
                       for link in self.candidates(kind, flows) for f in flows)
                   for kind in wanted):
                break
        return paths

    def _port_packets(self, switches: Iterable[str], *,
                      rx: bool = False) -> dict[tuple[str, int], int]:
        """(switch, port) -> packets it sent (plus those it received, with `rx`)."""
        out = {}
        ctl = self.session.connected()
        for sw in switches:
            received, sent = ctl.port_counters(sw)
            for port in set(sent) | (set(received) if rx else set()):
                out[(sw, port)] = (sent.get(port, (0, 0))[0]
                                   + (received.get(port, (0, 0))[0] if rx else 0))
        return out

    def _burst_path(self, flow: Flow, before: dict[tuple[str, int], int], count: int,
                    timeout: float) -> frozenset[tuple[str, int]]:
        """Wait until the burst reached the destination NIC; the ports it left through.

        The switches are read one after another, so a reading taken while the burst is in
        flight can show it at the last hop but not yet at a switch read earlier; the path
        comes from one more reading, taken once the burst has arrived."""
        last_hops = self.spec.attachments(flow.dst)
        switches = [sw.name for sw in self.spec.switches]
        deadline = time.monotonic() + timeout
        while True:
            grown = self._grown(switches, before)
            delivered = sum(grown.get(hop, 0) for hop in last_hops)
            if delivered >= count or time.monotonic() > deadline:
                break
            time.sleep(0.02)  # counter poll interval
        if delivered < count // 2:
            raise RuntimeError(f"trace of {flow.name}: {delivered} of {count} packets reached "
                               f"{flow.dst} within {timeout:g} s; the fabric does not forward")
        grown = self._grown(switches, before)
        return frozenset(key for key, n in grown.items() if n >= count // 2)

    def _grown(self, switches: list[str], before: dict[tuple[str, int], int]
               ) -> dict[tuple[str, int], int]:
        return {key: n - before.get(key, 0) for key, n in self._port_packets(switches).items()}

    def crosses(self, kind: str, target: str, path: frozenset[tuple[str, int]]) -> bool:
        """Whether a flow with this traced path goes through the failure's target."""
        if kind == "tor":
            return any(sw == target for sw, _ in path)
        link = links.find_link(self.spec, target)
        return any((end.node, end.port) in path for end in (link.a, link.b))

    # ---- what to fail --------------------------------------------------------------------
    def tors_of(self, nics: list[str]) -> list[str]:
        return sorted({sw for nic in nics for sw, _ in self.spec.attachments(nic)})

    def candidates(self, kind: str, flows: list[Flow]) -> list[Link]:
        """Links a failure of `kind` may hit for these flows (tor: the source ToRs' uplinks)."""
        if kind not in KINDS:
            raise ValueError(f"unknown failure kind {kind!r}; choose from {', '.join(KINDS)}")
        src_tors = self.tors_of([f.src for f in flows])
        dst_tors = self.tors_of([f.dst for f in flows])
        if kind in ("uplink", "silent", "tor"):
            tors, shared = src_tors, set(dst_tors)
        else:
            tors, shared = dst_tors, set(src_tors)
        out = []
        for tor in tors:
            for ln in self.spec.links_of(tor):
                far = ln.other(tor).node
                if self.spec.is_switch(far) and far not in shared:
                    out.append(ln)
        return out

    def busiest_link(self, candidates: list[Link], seconds: float = 0.5) -> Link:
        """The candidate link that carried the most packets over `seconds` (port counters)."""
        ends = [(ln, ln.a if self.spec.is_switch(ln.a.node) else ln.b) for ln in candidates]
        if not ends:
            raise ValueError("no candidate link to fail in this fabric for these flows")

        switches = {end.node for _, end in ends}
        before = self._port_packets(switches, rx=True)
        time.sleep(seconds)  # the observation window
        after = self._port_packets(switches, rx=True)
        return max(ends, key=lambda le: after.get((le[1].node, le[1].port), 0)
                   - before.get((le[1].node, le[1].port), 0))[0]

    def target_of(self, kind: str, link: Link) -> str:
        """For `tor`, the ToR at the near end of the link; the link otherwise."""
        if kind == "tor":
            return link.a.node if self.spec.switch(link.a.node).tier == 1 else link.b.node
        return links.link_name(link)

    # ---- failing and restoring -----------------------------------------------------------
    def fail(self, failure: Failure, drop: float = 0.3) -> float:
        failure.t_fail = time.time()
        if failure.kind == "tor":
            links.set_switch(self.spec, failure.target, False)
        elif failure.kind == "silent":
            links.set_silent_drop(self.spec, links.find_link(self.spec, failure.target), drop)
        else:
            links.set_link(self.spec, links.find_link(self.spec, failure.target), False)
        return failure.t_fail

    def restore(self, failure: Failure) -> float:
        failure.t_restore = time.time()
        if failure.kind == "tor":
            links.set_switch(self.spec, failure.target, True)
        elif failure.kind == "silent":
            links.set_silent_drop(self.spec, links.find_link(self.spec, failure.target), 0.0)
        else:
            links.set_link(self.spec, links.find_link(self.spec, failure.target), True)
        return failure.t_restore


def pick_failure(lab: FailoverLab, kind: str, flows: list[Flow],
                 paths: dict[str, frozenset[tuple[str, int]]]) -> Failure:
    """The candidate of `kind` that the most traced flows cross (the first of equals)."""
    best, most = None, 0
    for link in lab.candidates(kind, flows):
        target = lab.target_of(kind, link)
        n = sum(lab.crosses(kind, target, paths[f.name]) for f in flows)
        if n > most:
            best, most = target, n
    if best is None:
        raise RuntimeError(f"no flow crosses any {kind} candidate in {lab.spec.name}: "
                           f"traced paths {sorted(map(sorted, paths.values()))}")
    return Failure(kind, best)


def settle(lab: FailoverLab, timeout: float = 15.0) -> None:
    """Wait until the controller has handled every event and no link is isolated."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = lab.rc is not None and not lab.rc.wait_idle(0.1)
        isolated = lab.prober is not None and lab.prober.isolated
        down = lab.rc is not None and lab.rc.down_links()
        if not (busy or isolated or down):
            return
        time.sleep(0.1)  # poll interval of the wait above
    raise RuntimeError(f"the fabric did not settle within {timeout:g} s: "
                       f"down {lab.rc.down_links() if lab.rc else []}, "
                       f"isolated {sorted(lab.prober.isolated) if lab.prober else []}")
