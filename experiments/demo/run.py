"""The live failover demo: HPN 7.0 on the embedded switch, flows, three recoveries, the verdict.

`fabric-lab demo` (and `sudo make demo`) brings the fabric up with its links unshaped
(`link_mbps` = 0; queues of `queue_pkts` = 1000, an MTU of `LINK_MTU`), starts RoCEv2-format
flows of 4096-byte datagrams at 1600 packets/s each (52 Mb/s; 16 packets per 10 ms bin: an
outage of 50 ms is 80 packets lost; on BMv2 150 packets/s of 256 bytes, `FLOW_RATES`), and runs
the stages of
`experiments.demo.stages` back to back: data-plane fast failover, controller reroute, silent
drop found by the probes (and, on request, no failover at all). The terminal view
(`experiments.demo.view`) and, with `--web`, the browser show it live; at the end it prints
each stage's loss windows, writes CSV files and `timeline.png`, and fails (`DemoFailed`) when a
flow did not recover.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from controller.reconverge import LinkEvent
from experiments.demo.measure import StageOutcome, not_back, stage_outcomes
from experiments.demo.plot import (
    EVENT_FIELDS,
    GAP_FIELDS,
    OUTCOME_FIELDS,
    STAGE_FIELDS,
    TIMELINE_FIELDS,
    plot_timeline,
)
from experiments.demo.stages import (
    DEFAULT_KINDS,
    STAGE_KINDS,
    EventLog,
    Stage,
    failure_kind,
    plan_stages,
    run_stages,
)
from experiments.demo.view import LiveView
from experiments.framework.failover_lab import LINK_MTU, FailoverLab, FlowRun, relieved_pps
from experiments.framework.recovery import loss_window
from experiments.framework.results import allocate
from topos import FabricSpec, build_fabric
from topos.errors import FabricLabError


class DemoFailed(FabricLabError, RuntimeError):
    """The fabric did not recover (the plot and files are written all the same)."""

    def __init__(self, message: str, plot: Path | None = None):
        super().__init__(message)
        self.plot = plot


@dataclass
class DemoState:
    """What is running now, for live views other than the terminal (the web view)."""

    run: FlowRun | None = None
    stage: Stage | None = None
    phase: str = "starting"
    stages: list[Stage] = field(default_factory=list)
    nominal_mbps: float = 0.0
    notes: list[str] = field(default_factory=list)  # for the terminal view (the web view's URL)

    def text(self) -> str:
        return LiveView.phase_text(self.stage, self.phase, time.time()) if self.run else self.phase


Attach = Callable[[FailoverLab, DemoState, EventLog], AbstractContextManager]


def _first_reroute(events: list[LinkEvent], t_fail: float) -> LinkEvent | None:
    done = [e for e in events if not e.up and e.rerouted is not None and e.seen >= t_fail - 0.05]
    return min(done, key=lambda e: e.seen, default=None)


# per-flow packets/s and datagram size by target (docs/rates.md): 8 flows x 3 switch hops at
# 1600/s are 38,400 packet-hops/s, about two thirds of what a fabric of p4switches carries
# without loss on two cores; at 150/s, 3,600, half of what BMv2 carries
FLOW_RATES = {"p4switch": (1600.0, 4096), "bmv2": (150.0, 256)}


def with_link_rate(spec: FabricSpec, link_mbps: float, queue_pkts: int) -> FabricSpec:
    """`spec` with every rate-limited link at `link_mbps` or more (0: no link rate-limited) and
    every queue of at least `queue_pkts` (unshaped links stay so): the flows a failure moves
    onto one link must fit on it, and a burst a switch sends after the machine kept it off the
    CPU must fit in the queue, or queues, not the failure, drop packets (docs/rates.md)."""
    links = []
    for ln in spec.links:
        if not link_mbps:
            ln = dataclasses.replace(ln, rate_mbps=None)
        elif ln.rate_mbps is not None and ln.rate_mbps < link_mbps:
            ln = dataclasses.replace(ln, rate_mbps=link_mbps)
        if ln.queue_pkts is not None and ln.queue_pkts < queue_pkts:
            ln = dataclasses.replace(ln, queue_pkts=queue_pkts)
        links.append(ln)
    return dataclasses.replace(spec, links=links)


def stage_rows(stages: list[Stage], events: list, t0: float) -> list[dict]:
    rows = []
    for i, stage in enumerate(stages):
        f = stage.failure
        first = None if stage.kind == "none" else _first_reroute(
            [e for e in events if e.seen <= f.t_restore], f.t_fail)
        rerouted = None if first is None else first.rerouted  # set when first is: see its filter
        rows.append({"stage": i, "kind": stage.kind, "title": stage.title, "target": f.target,
                     "hold_s": stage.hold_s, "t_fail_s": round(f.t_fail - t0, 4),
                     "t_restore_s": round(f.t_restore - t0, 4),
                     "t_settled_s": round(stage.t_settled - t0, 4),
                     "t_reroute_s": "" if rerouted is None else round(rerouted - t0, 4),
                     "detect_ms": "" if first is None else round((first.seen - f.t_fail) * 1000, 1),
                     "reroute_ms": ("" if first is None or first.reroute_s is None
                                    else round(first.reroute_s * 1000, 1)),
                     "crossing": " ".join(stage.crossing)})
    return rows


def _live_summary(stage: Stage, run: FlowRun) -> str:
    with run.lock:
        gaps = {name: list(g) for name, g in run.lossy_gaps.items()}
    windows = [loss_window(gaps.get(name, []), stage.failure.t_fail, stage.hold_s,
                           span=stage.kind == "silent") for name in stage.crossing]
    worst = max(windows, default=0.0)
    return (f"{stage.kind:<9}{stage.failure.target:<20}{len(stage.crossing)} flows cross it; "
            + (f"worst loss window {worst * 1000:.0f} ms" if worst else "no packet lost"))


def report(stages: list[Stage], outcomes: list[list[StageOutcome]], out: TextIO) -> None:
    for stage, rows in zip(stages, outcomes, strict=True):
        out.write(f"\n{stage.kind} ({stage.title}): {stage.failure.target}\n")
        out.write(f"  {'flow':<24}{'loss window':>12}{'outage':>9}{'lost':>7}  state\n")
        for o in rows:
            window = f"{o.loss_window_s * 1000:.0f} ms" if o.crossed else "not crossed"
            state = ("recovered" if o.recovered else
                     "NOT RECOVERED (expected: no failover)" if o.kind == "none" else "NOT RECOVERED")
            out.write(f"  {o.flow:<24}{window:>12}{o.outage_s * 1000:>6.0f} ms{o.lost:>7}  {state}\n")


def overload_note(ring_drops: int | None, pps: float) -> str | None:
    """What to say when the switches' receive rings dropped frames during the run: the
    machine could not keep up with the flows, so losses may be its, not the failures'."""
    if not ring_drops:
        return None
    return (f"note: the switches' receive rings dropped {ring_drops} frames: this machine did "
            f"not keep up with {pps:g} packets/s per flow (losses of flows that crossed no "
            f"failure are the machine's); try --pps {relieved_pps(pps)} (docs/rates.md)")


def run_demo(*, kinds: tuple[str, ...] | list[str] = DEFAULT_KINDS, fabric: str = "hpn7",
             target: str = "p4switch", before_s: float = 3.0, hold_s: float = 3.0,
             between_s: float = 2.0, after_s: float = 3.0, pps: float | None = None,
             size: int | None = None,
             link_mbps: float = 0.0, queue_pkts: int = 1000, mtu: int = LINK_MTU,
             flows_per_pair: int = 4,
             out: Path | None = None, base: Path = Path("results"),
             stream: TextIO = sys.stdout, tty: bool | None = None,
             spec: FabricSpec | None = None, attach: Attach | None = None,
             lab_options: dict | None = None) -> Path:
    """Run the demo; returns the timeline plot's path, raises `DemoFailed` when a flow did not
    recover. `spec` replaces the built fabric (links raised to `link_mbps` or unshaped,
    `queue_pkts`, `mtu`);
    `attach(lab, state, events)` is entered while the fabric runs (a web view); `lab_options` go
    to `FailoverLab` (e.g. reconverge=False)."""
    default_pps, default_size = FLOW_RATES.get(target, FLOW_RATES["p4switch"])
    pps, size = pps or default_pps, size or default_size
    spec = with_link_rate(spec or build_fabric(fabric), link_mbps, queue_pkts).with_mtu(mtu)
    result = allocate("demo", out, base)
    bin_s = 0.01
    drop = 0.3
    params = {"fabric": spec.name, "kinds": list(kinds), "before_s": before_s, "hold_s": hold_s,
              "between_s": between_s, "after_s": after_s, "pps": pps, "size": size,
              "link_mbps": link_mbps, "queue_pkts": queue_pkts, "mtu": mtu,
              "bin_s": bin_s, "flows_per_pair": flows_per_pair, "drop": drop}
    result.write_params("demo", params, target=target, fabric=spec.name)
    tty = stream.isatty() if tty is None else tty
    stream.write(f"Bringing up {spec.name} ({len(spec.switches)} switches, "
                 f"{len(spec.host_nics())} NICs) on {target}...\n")
    stream.flush()
    started = time.monotonic()
    nominal = pps * size * 8 / 1e6
    state = DemoState(nominal_mbps=nominal)
    with FailoverLab(spec, target=target, log_dir=result.path / "logs", **(lab_options or {})) as lab:
        stream.write(f"fabric up and routed in {time.monotonic() - started:.1f} s; tracing the "
                     f"flows' paths\n")
        stream.flush()
        flows = lab.plan_flows(lab.default_pairs(), flows_per_pair)
        paths = lab.trace_crossing(flows, [failure_kind(k) for k in kinds if k in STAGE_KINDS])
        stages = state.stages = plan_stages(lab, list(kinds), flows, paths, hold_s)
        events = EventLog(lab)
        view = LiveView(f"AI Fabric Lab: {spec.name} on {target}, {len(stages)} recoveries",
                        nominal, stream, tty, events=events, notes=state.notes)
        summarised: set[int] = set()
        drops_before = lab.kernel_drops()

        def tick(run: FlowRun, stage: Stage | None, phase: str) -> None:
            state.stage, state.phase = stage, phase
            if stage is not None and phase == "restored" and id(stage) not in summarised:
                summarised.add(id(stage))
                view.results.append(_live_summary(stage, run))
            view.tick(run, stage, phase)

        with attach(lab, state, events) if attach else contextlib.nullcontext(), \
                lab.start_flows(flows, pps=pps, size=size, bin_s=bin_s) as run:
            state.run = run
            run_stages(lab, run, stages, events, before_s=before_s, between_s=between_s,
                       after_s=after_s, drop=drop, on_tick=tick)
            t_end = time.time() - 0.3  # the receivers report their bins every 0.1 s
            state.phase = "done"
        ring_drops = lab.kernel_drops_since(drops_before)
        all_events = events()
    names = [f.name for f in flows]
    bins = run.snapshot()
    nominal_bin = pps * bin_s
    outcomes = [stage_outcomes(s, names, run.results, bins, t0=run.t0, bin_s=bin_s, size=size,
                               nominal_per_bin=nominal_bin) for s in stages]
    result.write_csv("timeline.csv", [{"flow": name, "t_s": round(i * bin_s, 3),
                                       "packets": round(n / size, 2)}
                                      for name in names for i, n in sorted(bins.get(name, {}).items())],
                     TIMELINE_FIELDS)
    result.write_csv("gaps.csv", [
        {"flow": name, "t_start_s": round(g[0] - run.t0, 4), "t_end_s": round(g[1] - run.t0, 4),
         "lost": int(g[2])}
        for name in names for g in run.results.get(name, {}).get("gaps", []) if g[2] > 0],
        GAP_FIELDS)
    result.write_csv("stages.csv", stage_rows(stages, all_events, run.t0), STAGE_FIELDS)
    result.write_csv("outcomes.csv", [
        {"stage": i, "kind": o.kind, "target": o.target, "flow": o.flow, "crossed": int(o.crossed),
         "loss_window_ms": round(o.loss_window_s * 1000, 1), "outage_ms": round(o.outage_s * 1000),
         "lost": o.lost, "recovered": int(o.recovered)}
        for i, rows in enumerate(outcomes) for o in rows], OUTCOME_FIELDS)
    result.write_csv("events.csv", [
        {"link": e.link, "state": "up" if e.up else "down", "source": e.source,
         "t_s": round(e.seen - run.t0, 4),
         "reroute_ms": "" if e.reroute_s is None else round(e.reroute_s * 1000, 1),
         "writes": e.writes, "error": e.error} for e in all_events], EVENT_FIELDS)
    plot = plot_timeline(result)
    report(stages, outcomes, stream)
    problems = [f"{o.flow} did not recover from the {o.kind} failure of {o.target}"
                for rows in outcomes for o in rows if not o.expected]
    silent = [name for name in names if name not in run.results]
    problems += [f"no packet of {name} arrived: the fabric does not forward" for name in silent]
    problems += [f"{name} is not delivering without loss at the end of the run"
                 for name in not_back(names, run.results, bins, t0=run.t0, t_end=t_end,
                                      bin_s=bin_s, size=size, nominal_per_bin=nominal_bin)
                 if name not in silent]
    result.update_params(status="failed" if problems else "complete", plots=[plot.name],
                         problems=problems, switch_rx_dropped=ring_drops)
    overload = overload_note(ring_drops, pps)
    # a failed run gives the note with its verdict, so it is printed once either way
    stream.write(f"\ntimeline plot: {plot}\n" + (f"{overload}\n" if overload and not problems else ""))
    stream.flush()
    if problems:
        raise DemoFailed("the fabric did not recover:\n  " + "\n  ".join(problems)
                         + f"\n(switch logs in {result.path / 'logs'})"
                         + (f"\n{overload}" if overload else ""), plot)
    return plot
