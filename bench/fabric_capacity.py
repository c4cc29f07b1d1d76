"""Fabric capacity: the highest lossless packet-hops/s of an all-to-all of paced RoCEv2 flows.

    sudo .venv/bin/python bench/fabric_capacity.py [--quick] [--target both|p4switch|bmv2]
        [--fabric leafspine,hpn7] [--repeat N] [--start-pps PPS] [--factor F] [--refine N]
        [--dwell S] [--size BYTES] [--mtu BYTES] [--link-mbps MBPS] [--queue-depth PKTS]
        [--switch-processes N] [--pipelines native,python,c]

Per fabric and target, one fabric is brought up (as the experiments do: `FailoverLab`, the
reconvergence loop on, link probes off; names prefixed `fc`, so it runs beside other fabrics) and
every NIC sends one paced flow (`python -m traffic paced send`, the experiments' flows) to every
NIC of every other server. Each step raises every flow's rate by `--factor` until a step fails;
`--refine` bisects between the last pass and the first failure. A step passes when, over the
whole step (flows started, dwell, senders stopped, queues drained):
- no switch dropped: the P4 port counters (`rx_port_counter` - `tx_port_counter`, every switch,
  both targets) balance, and on p4switch the kernel dropped nothing on its ports' rings
  (`port_stats` rx_dropped) and no queue dropped (`queue_stats` dropped, priority 0);
- every datagram a sender sent arrived (receivers' records; `lost` = sent - received);
- no flow fell behind: each flow's receive rate, (packets - 1) / (last - first arrival), is
  within `--tolerance` (3 %) of the offered rate (a sender that falls more than 2 ms behind
  skips, so this also catches a sender that cannot keep up).
Packet-hops/s are measured, not estimated: `hops/s` is what the flows achieved, their receive
rates summed times the packet-hops per delivered packet (the switches' tx counters summed over
the fabric, over the whole step, divided by the datagrams received); `window` is the tx counters
over `--dwell` seconds after a second of warm-up (it also counts a backlog the switches forward
late). Over the same window, from /proc: CPU in % of
one core of the switch processes, the hosts' traffic processes, this process (the controller:
reconvergence loop and the counter reads), the ksoftirqd threads, and everything else on the
machine ("others": busy time in /proc/stat minus those); the softirq time of /proc/stat
(system-wide; a kernel without CONFIG_IRQ_TIME_ACCOUNTING charges it to the task it interrupted
as well, so it may overlap the columns before it) and NET_RX + NET_TX softirqs/s
(/proc/softirqs); context switches per delivered packet (voluntary + involuntary, every thread
of the switch and traffic processes, /proc/<pid>/task/*/status); and wake-ups/s (their
voluntary switches: each is a sleep that a wake-up ends). The load average is printed per step,
the busiest processes of the machine at the start.

Before the ramp, one row with no flows: what the fabric takes idle (the switches' gRPC
servers, the controller's loop). Each step prints its verdict and, when it fails, why (packets
counted into a switch and not out of it, queue and ring drops, datagrams lost end to end, flows
that fell behind). The summary has each ramp's best step and, at the best, the switches' CPU
per packet-hop (µs) and packet-hops per switch wake-up (how many packets a switch forwards
each time it wakes).
The first step is 40 datagrams/s per flow on p4switch, 10 on BMv2 (`--start-pps`).
`--switch-processes N`: p4switch's rows with the fabric's switches served by N processes
(`fabric-lab up --switch-processes`, target `p4switch/N`) instead of one process each.
`--pipelines`: p4switch's rows on its native pipeline (`p4switch`, built first), its Python
pipeline (`p4switch-py`), its C data plane (`p4switch-c`: `--pipeline c`, the switch's loop in
C), or several (default: native).
`--quick`: steps x1.6, 3 s dwell, two bisection steps (so within 1.15 times of the capacity; a
few minutes for both fabrics on one target).
Without BMv2 on PATH (`sudo bash scripts/build_p4lang.sh` installs it: docs/targets.md) its rows
are skipped with a message.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proc_accounting import (  # bench/proc_accounting.py
    TICKS,
    alive,
    busiest,
    cpu_ticks,
    ctx_switches,
    ksoftirqd_pids,
    net_softirqs,
    system_ticks,
    with_children,
)
from switch_pps import native_missing  # bench/switch_pps.py

from experiments.framework.failover_lab import FailoverLab, Flow
from targets import CHOICES, TARGETS, get_target
from targets.runtime_cli import RuntimeCli
from topos import FABRICS, build_fabric, relocate
from topos.model import FabricSpec

SUFFIXES = {"native": "", "python": "-py", "c": "-c"}  # a row's label: p4switch + suffix
# names and ports no test uses (tests/ports.py), below the ephemeral port range
PREFIX, GRPC_BASE, THRIFT_BASE = "fc", 14000, 14500
WARMUP_S = 1.0
START_PPS = {"p4switch": 40.0, "bmv2": 10.0}  # per flow: well below either's limit
FULL = {"factor": 1.3, "dwell": 8.0, "refine": 2, "repeat": 2}
QUICK = {"factor": 1.6, "dwell": 3.0, "refine": 2, "repeat": 1}
GROUPS = ("switches", "hosts", "controller", "ksoftirqd")


@dataclass
class Snapshot:
    t: float
    ticks: dict[str, int]  # group -> CPU ticks
    ctx: tuple[int, int]  # (voluntary, involuntary), switches + hosts
    switch_sleeps: int  # the switches' voluntary context switches
    busy: int  # /proc/stat: every CPU's non-idle ticks
    softirq: int
    net_softirqs: int  # /proc/softirqs NET_RX + NET_TX, every CPU
    tx_hops: int  # the switches' tx port counters, summed


# ---- the fabric --------------------------------------------------------------------------
def fabric_spec(name: str, link_mbps: float, delay_ms: float, queue_pkts: int,
                mtu: int | None = None) -> FabricSpec:
    spec = build_fabric(name, rate_mbps=link_mbps or None, delay_ms=delay_ms,
                        queue_pkts=queue_pkts).with_mtu(mtu)
    return relocate.prefixed(spec, PREFIX, GRPC_BASE, THRIFT_BASE)


def all_to_all(lab: FailoverLab) -> list[Flow]:
    """One flow from every NIC to every NIC of every other server."""
    owner = {nic.name: host.name for host in lab.spec.hosts for nic in host.nics}
    nics = [nic.name for nic in lab.spec.host_nics()]
    pairs = [(a, b) for a in nics for b in nics if owner[a] != owner[b]]
    return lab.plan_flows(pairs, per_pair=1)


@dataclass
class SwitchCounters:
    rx: int = 0  # P4 rx_port_counter, every port of every switch
    tx: int = 0
    kernel_drops: int = 0  # p4switch: ring drops and tx errors
    queue_drops: int = 0  # p4switch: traffic-manager tail drops, priority 0

    def __sub__(self, other: SwitchCounters) -> SwitchCounters:
        return SwitchCounters(self.rx - other.rx, self.tx - other.tx,
                              self.kernel_drops - other.kernel_drops,
                              self.queue_drops - other.queue_drops)


def _words_after(text: str, key: str) -> int:
    words = text.split()
    return sum(int(words[i + 1]) for i, w in enumerate(words[:-1]) if w == key)


def read_counters(lab: FailoverLab, clis: dict[str, RuntimeCli], tx_only: bool = False
                  ) -> SwitchCounters:
    ctl = lab.session.connected()
    out = SwitchCounters()
    for sw in lab.spec.switches:
        rx, tx = ctl.port_counters(sw.name)
        out.rx += sum(p for p, _ in rx.values())
        out.tx += sum(p for p, _ in tx.values())
        cli = clis.get(sw.name)
        if cli is not None and not tx_only:
            ports = lab.spec.ports(sw.name)
            stats = cli.command("port_stats " + " ".join(str(p) for p in ports))
            out.kernel_drops += _words_after(stats, "rx_dropped") + _words_after(stats,
                                                                                  "tx_errors")
            out.queue_drops += sum(int(cli.queue_stats(p, 0)["dropped"]) for p in ports)
    return out


@dataclass
class Step:
    pps: float
    flows: int
    seconds: float = 0.0
    hops_per_s: float = 0.0  # achieved: the flows' receive rates x hops per packet
    window_hops_per_s: float = 0.0  # the switches' tx counters over the window
    received_pps: float = 0.0  # the flows' receive rates, summed
    delivered_per_s: float = 0.0
    sent: int = 0
    lost: int = 0
    switch_drops: int = 0
    lagging: int = 0
    drops: SwitchCounters = field(default_factory=SwitchCounters)  # over the step
    worst_rate: float = 1.0  # slowest flow's receive rate / offered
    cpu: dict[str, float] = field(default_factory=dict)  # % of one core
    softirq_pct: float = 0.0
    others_pct: float = 0.0
    ctx_per_packet: float = 0.0
    wakeups_per_s: float = 0.0
    switch_wakeups_per_s: float = 0.0
    net_softirqs_per_s: float = 0.0
    load: float = 0.0

    @property
    def passed(self) -> bool:
        return self.lost == 0 and self.switch_drops == 0 and self.lagging == 0 and self.sent > 0


class Probe:
    """CPU, context switches and hop counters of the running fabric, read together."""

    def __init__(self, lab: FailoverLab, traffic_pids: list[int]):
        self.lab = lab
        self.groups = {
            "switches": sorted({lab.net.switch(sw.name).proc.pid for sw in lab.spec.switches}),
            "hosts": with_children(traffic_pids),
            "controller": [os.getpid()],
            "ksoftirqd": ksoftirqd_pids(),
        }

    def snapshot(self) -> Snapshot:
        tx = read_counters(self.lab, {}, tx_only=True).tx
        t = time.monotonic()  # when the counters were read (the /proc reads take little)
        ticks = {g: sum(alive(cpu_ticks, p, 0) for p in pids) for g, pids in self.groups.items()}
        vol = invol = switch_sleeps = 0
        for group in ("switches", "hosts"):
            for pid in self.groups[group]:
                v, i = alive(ctx_switches, pid, (0, 0))
                vol, invol = vol + v, invol + i
                switch_sleeps += v if group == "switches" else 0
        busy, softirq = system_ticks()
        return Snapshot(t, ticks, (vol, invol), switch_sleeps, busy, softirq,
                        net_softirqs(), tx)


def idle_step(lab: FailoverLab, dwell: float) -> Step:
    """The fabric with no flows: the CPU it takes whatever the load (gRPC servers, loops)."""
    step = Step(0.0, 0, load=os.getloadavg()[0])
    probe = Probe(lab, [])
    a = probe.snapshot()
    time.sleep(dwell)  # the measurement window
    b = probe.snapshot()
    measure(step, a, b, 0.0)
    return step


def measure(step: Step, a: Snapshot, b: Snapshot, hops_per_packet: float) -> None:
    """Rates and the CPU split of the window between two snapshots."""
    seconds = step.seconds = b.t - a.t
    step.window_hops_per_s = (b.tx_hops - a.tx_hops) / seconds
    step.hops_per_s = step.received_pps * hops_per_packet
    step.delivered_per_s = step.window_hops_per_s / hops_per_packet if hops_per_packet else 0.0
    core = TICKS * seconds / 100  # ticks in 1 % of one core
    step.cpu = {g: (b.ticks[g] - a.ticks[g]) / core for g in GROUPS}
    step.softirq_pct = (b.softirq - a.softirq) / core
    step.others_pct = max(0.0, (b.busy - a.busy) / core - sum(step.cpu.values()))
    vol, invol = b.ctx[0] - a.ctx[0], b.ctx[1] - a.ctx[1]
    step.wakeups_per_s = vol / seconds
    step.switch_wakeups_per_s = (b.switch_sleeps - a.switch_sleeps) / seconds
    delivered = step.delivered_per_s * seconds
    step.ctx_per_packet = (vol + invol) / delivered if delivered else 0.0
    step.net_softirqs_per_s = (b.net_softirqs - a.net_softirqs) / seconds


def run_step(lab: FailoverLab, flows: list[Flow], clis: dict[str, RuntimeCli], pps: float,
             size: int, dwell: float, tolerance: float, pacer: str = "auto") -> Step:
    step = Step(pps, len(flows), load=os.getloadavg()[0])
    before = read_counters(lab, clis)
    with lab.start_flows(flows, pps=pps, size=size, pacer=pacer) as run:
        probe = Probe(lab, [proc.pid for _role, proc in run.procs])
        time.sleep(WARMUP_S)  # measuring steady state: the flows must have started
        a = probe.snapshot()
        time.sleep(dwell)  # the measurement window
        b = probe.snapshot()
        run.stop()  # senders, drain, receivers
    drops = step.drops = read_counters(lab, clis) - before
    # queue drops are among the packets counted in but not out; ring drops never reach a counter
    step.switch_drops = max(drops.rx - drops.tx, drops.queue_drops, 0) + drops.kernel_drops
    received = 0
    for flow in flows:
        sent = run.sent.get(flow.name, {}).get("sent", 0)
        rec = run.results.get(flow.name, {})
        got = rec.get("packets", 0)
        step.sent += sent
        received += got
        span = rec.get("last_t", 0.0) - rec.get("first_t", 0.0)
        rate = (got - 1) / span / pps if got > 1 and span > 0 else 0.0
        step.received_pps += rate * pps
        step.worst_rate = min(step.worst_rate, rate)
        if rate < 1 - tolerance:
            step.lagging += 1
    step.lost = step.sent - received
    measure(step, a, b, drops.tx / received if received else 0.0)
    return step


# ---- the ramp ----------------------------------------------------------------------------
HEADER = (f"{'fabric':<10}{'target':<11}{'pps/flow':>9}{'flows':>6}{'hops/s':>9}{'window':>8}"
          f"{'sw drop':>8}{'lost':>7}{'slow':>5}{'worst':>6}{'switch%':>8}{'hosts%':>7}"
          f"{'ctl%':>6}{'ksirqd%':>8}{'softirq%':>9}{'others%':>8}{'ctx/pkt':>8}"
          f"{'wakeup/s':>9}{'load':>6}  verdict")


def row(fabric: str, target: str, s: Step) -> str:
    c = s.cpu
    return (f"{fabric:<10}{target:<11}{s.pps:>9.0f}{s.flows:>6}{s.hops_per_s:>9.0f}"
            f"{s.window_hops_per_s:>8.0f}{s.switch_drops:>8}{s.lost:>7}{s.lagging:>5}"
            f"{s.worst_rate:>6.2f}{c['switches']:>8.0f}{c['hosts']:>7.0f}{c['controller']:>6.0f}"
            f"{c['ksoftirqd']:>8.0f}{s.softirq_pct:>9.0f}{s.others_pct:>8.0f}"
            f"{s.ctx_per_packet:>8.2f}{s.wakeups_per_s:>9.0f}{s.load:>6.2f}  "
            f"{verdict(s)}")


def verdict(s: Step) -> str:
    if not s.flows:
        return "idle (no flows)"
    if s.passed:
        return "pass"
    d = s.drops
    why = [f"{what} {n}" for what, n in (("counted in not out", d.rx - d.tx),
                                         ("queue", d.queue_drops), ("ring", d.kernel_drops),
                                         ("lost", s.lost), ("slow flows", s.lagging)) if n]
    return "FAIL: " + ", ".join(why or ["nothing sent"])


def ramp(lab: FailoverLab, flows: list[Flow], clis: dict[str, RuntimeCli], args: argparse.Namespace,
         fabric: str, target: str) -> Step | None:
    """Raise the rate until a step fails, then bisect; the best passing step."""
    best: Step | None = None
    failed: float | None = None
    pps = args.start_pps or START_PPS[target.partition("/")[0].partition("-")[0]]
    for _ in range(args.max_steps):
        step = run_step(lab, flows, clis, pps, args.size, args.dwell, args.tolerance,
                        args.pacer)
        print(row(fabric, target, step), flush=True)
        if not step.passed:
            failed = pps
            break
        best = step
        pps *= args.factor
    for _ in range(args.refine if failed is not None and best is not None else 0):
        assert best is not None and failed is not None
        pps = (best.pps + failed) / 2
        step = run_step(lab, flows, clis, pps, args.size, args.dwell, args.tolerance,
                        args.pacer)
        print(row(fabric, target, step), flush=True)
        if step.passed:
            best = step
        else:
            failed = pps
    return best


def bench(fabric: str, target: str, args: argparse.Namespace, bests: list[Step | None]) -> None:
    """Bring the fabric up and ramp `--repeat` times; each ramp's best step goes to `bests`."""
    spec = fabric_spec(fabric, args.link_mbps, args.delay_ms, args.queue_pkts, args.mtu)
    pipeline = next((p for p, suffix in SUFFIXES.items() if suffix and target.endswith(suffix)),
                    "native")
    name, _, processes = target.removesuffix(SUFFIXES[pipeline]).partition("/")
    tgt = get_target(name).sharing_processes(int(processes) if processes else None)
    if name == "p4switch":
        tgt = tgt.with_options("--pipeline", pipeline)
    with FailoverLab(spec, target=tgt, reconverge=True, probes=False) as lab:
        clis = ({sw.name: tgt.cli(sw.thrift_port) for sw in spec.switches}
                if tgt.caps.reports_tm_stats and tgt.caps.serves_runtime_cli else {})
        try:
            if args.queue_depth is not None:
                from controller.queues import configure_queues
                configure_queues(spec, tgt, depth=args.queue_depth)
            flows = all_to_all(lab)
            print(row(fabric, target, idle_step(lab, args.dwell)), flush=True)
            for _ in range(args.repeat):
                bests.append(ramp(lab, flows, clis, args, fabric, target))
        finally:
            for cli in clis.values():
                cli.close()


def summary(results: list[tuple[str, str, list[Step | None]]]) -> None:
    print("\nhighest lossless packet-hops/s (each ramp), and the CPU split at the best step:")
    print(f"{'fabric':<10}{'target':<11}{'packet-hops/s':>24}{'median':>8}{'pps/flow':>9}"
          f"{'switch%':>8}{'hosts%':>7}{'ctl%':>6}{'softirq%':>9}{'others%':>8}{'ctx/pkt':>8}"
          f"{'wakeup/s':>9}{'sw µs/hop':>10}{'hops/sw wakeup':>15}{'NET sirq/s':>11}")
    for fabric, target, bests in results:
        passed = [b for b in bests if b is not None]
        if not passed:
            print(f"{fabric:<10}{target:<11}{'no step passed' if bests else 'no ramp finished':>24}")
            continue
        each = ", ".join(f"{b.hops_per_s:.0f}" for b in passed)
        top = max(passed, key=lambda b: b.hops_per_s)
        c = top.cpu
        print(f"{fabric:<10}{target:<11}{each:>24}"
              f"{statistics.median(b.hops_per_s for b in passed):>8.0f}{top.pps:>9.0f}"
              f"{c['switches']:>8.0f}{c['hosts']:>7.0f}{c['controller']:>6.0f}"
              f"{top.softirq_pct:>9.0f}{top.others_pct:>8.0f}{top.ctx_per_packet:>8.2f}"
              f"{top.wakeups_per_s:>9.0f}{c['switches'] * 1e4 / max(top.window_hops_per_s, 1.0):>10.1f}"
              f"{top.window_hops_per_s / max(top.switch_wakeups_per_s, 1.0):>15.2f}"
              f"{top.net_softirqs_per_s:>11.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fabric", default="leafspine,hpn7",
                        help="comma-separated fabrics (default: leafspine,hpn7)")
    parser.add_argument("--target", dest="selection", default="both", choices=("both", *CHOICES))
    parser.add_argument("--quick", action="store_true",
                        help="steps x1.6, 3 s dwell, two bisection steps, one ramp (options given "
                             "still count)")
    parser.add_argument("--repeat", type=int, help="ramps per fabric and target (2; quick 1)")
    parser.add_argument("--pacer", choices=("auto", "c", "python"), default="auto",
                        help="the senders' pacing loop (traffic paced send --pacer)")
    parser.add_argument("--start-pps", type=float, default=None,
                        help="first step, per flow (default: p4switch 40, BMv2 10)")
    parser.add_argument("--factor", type=float, help="rate step factor, > 1 (1.3; quick 1.6)")
    parser.add_argument("--refine", type=int, help="bisection steps after a failure (2)")
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--dwell", type=float, help="measurement window, s (8; quick 3)")
    parser.add_argument("--size", type=int, default=1000, help="datagram bytes (as the experiments)")
    parser.add_argument("--mtu", type=int, default=None,
                        help="links' MTU (default the kernel's 1500; 4200 for --size 4096)")
    parser.add_argument("--tolerance", type=float, default=0.03,
                        help="a flow received below (1 - this) x its rate has fallen behind")
    parser.add_argument("--link-mbps", type=float, default=1000.0,
                        help="link rate (tc HTB); high enough not to bind; 0: no HTB")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="link delay (netem)")
    parser.add_argument("--queue-pkts", type=int, default=1000, help="link queue (tc)")
    parser.add_argument("--queue-depth", type=int, default=None,
                        help="switch egress queue depth (default: the target's, 64)")
    parser.add_argument("--switch-processes", type=int, default=None, metavar="N",
                        help="p4switch: the fabric's switches served by N processes")
    parser.add_argument("--pipelines", default="native",
                        help="p4switch's pipelines: some of native, python, c")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else FULL).items():  # what the options left open
        if getattr(args, key) is None:
            setattr(args, key, value)
    fabrics = [f for f in args.fabric.split(",") if f]
    errors = [f"unknown fabric {f!r}; choose from {', '.join(FABRICS)}"
              for f in fabrics if f not in FABRICS]
    if args.factor <= 1:
        errors.append(f"--factor must be above 1, got {args.factor:g}")
    if (args.start_pps is not None and args.start_pps <= 0) or args.dwell <= 0 \
            or args.repeat < 1:
        errors.append("--start-pps and --dwell must be positive, --repeat at least 1")
    if args.switch_processes is not None and args.switch_processes < 1:
        errors.append(f"--switch-processes must be 1 or more, got {args.switch_processes}")
    pipelines = [p for p in args.pipelines.split(",") if p]
    if not pipelines or set(pipelines) - set(SUFFIXES):
        errors.append(f"--pipelines: some of native, python, c, got {args.pipelines!r}")
    if not 0 < args.tolerance < 1:
        errors.append(f"--tolerance must be between 0 and 1, got {args.tolerance:g}")
    if errors:
        parser.error("; ".join(errors))
    if os.geteuid() != 0:
        print("fabric_capacity: needs root (Mininet)", file=sys.stderr)
        return 2
    targets = list(TARGETS) if args.selection == "both" else [get_target(args.selection).name]
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}  cpus {os.cpu_count()}  load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg())
          + f"  links {args.link_mbps:g} Mb/s {args.delay_ms:g} ms {args.queue_pkts} pkts  "
          f"datagrams {args.size} B  MTU {args.mtu or 1500}  dwell {args.dwell:g} s")
    print(f"busiest processes now (% of one core): {busiest()}")
    print("CPU in % of one core over the window; softirq overlaps the columns before it; "
          "others: the rest of the machine")
    print(HEADER)
    results: list[tuple[str, str, list[Step | None]]] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # take the fabric down as on Ctrl-C
    try:
        for target in targets:
            if not TARGETS[target].available():
                print(f"{target}: not installed, skipped "
                      "(BMv2: sudo bash scripts/build_p4lang.sh, docs/targets.md)")
                continue
            labels = [target]
            if target == "p4switch":
                base = target if args.switch_processes is None \
                    else f"p4switch/{args.switch_processes}"
                labels = [base + SUFFIXES[p] for p in pipelines]
                if "native" in pipelines and native_missing("ecmp"):
                    return 2
            for label in labels:
                for fabric in fabrics:
                    bests: list[Step | None] = []
                    results.append((fabric, label, bests))
                    bench(fabric, label, args, bests)
    except KeyboardInterrupt:
        print("interrupted; the fabric is down", file=sys.stderr)
        return 130
    finally:
        summary(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
