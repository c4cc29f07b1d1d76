"""The live failover demo: HPN 7.0 on the embedded switch, flows, a failure, the recovery.

`fabric-lab demo` (and `sudo make demo`) brings the fabric up, starts RoCEv2 flows, shows each
flow's throughput live (an ANSI view redrawn in place on a terminal; one line per second
otherwise, as in CI), fails the busiest link of the chosen kind, shows the dip, the controller's
events and the loss window, restores the link, and writes the timeline plot.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from experiments.failover import EVENT_FIELDS, OUTCOME_FIELDS, TIMELINE_FIELDS, plot_timeline
from experiments.failover_lab import FailoverLab, Failure, FlowRun
from experiments.failover_measure import loss_window
from experiments.failover_trial import TrialResult, run_trial
from experiments.results import ResultDir, allocate
from topos import FabricSpec, build_fabric

BLOCKS = " ▁▂▃▄▅▆▇█"
COLUMN_BINS = 10  # one sparkline column = 100 ms of 10 ms bins
COLUMNS = 50


def sparkline(values: list[float], full: float) -> str:
    """One block character per value, scaled so that `full` is the tallest block."""
    out = []
    for v in values:
        level = 0 if full <= 0 else round(min(v / full, 1.0) * (len(BLOCKS) - 1))
        out.append(BLOCKS[level])
    return "".join(out)


def columns(series: Mapping[int, int], now_bin: int, bin_s: float) -> list[float]:
    """Mb/s per 100 ms column, the last COLUMNS columns ending at `now_bin`."""
    out = []
    for c in range(COLUMNS, 0, -1):
        end = now_bin - (c - 1) * COLUMN_BINS
        cells = [series.get(i, 0) for i in range(end - COLUMN_BINS, end)]
        out.append(sum(cells) * 8 / (COLUMN_BINS * bin_s) / 1e6)
    return out


@dataclass
class LiveView:
    """Draws the flows' throughput; `tick()` is called about every 0.1 s while a trial runs."""

    title: str
    nominal_mbps: float
    out: TextIO = sys.stdout
    tty: bool = False
    every_s: float = 0.25  # redraw interval on a terminal
    line_every_s: float = 1.0  # interval of plain lines otherwise
    events: list = field(default_factory=list)
    _last: float = 0.0
    _phase_seen: str = ""
    _events_seen: int = 0
    _started: float = field(default_factory=time.time)

    def tick(self, run: FlowRun, failure: Failure, phase: str) -> None:
        now = time.time()
        if now - self._last < (self.every_s if self.tty else self.line_every_s):
            return
        self._last = now
        lines = self.frame(run, failure, phase, now) if self.tty else []
        if self.tty:
            self.out.write("\x1b[H\x1b[J" + "\n".join(lines) + "\n")
        else:
            if phase != self._phase_seen:
                self.out.write(f"--- {self._phase(failure, phase, now)}\n")
            for event in self.events[self._events_seen:]:
                if event.rerouted is not None or event.error:
                    self.out.write(f"--- controller: {event}\n")
            self._events_seen = len(self.events)
            self.out.write(self.line(run, failure, phase, now) + "\n")
        self._phase_seen = phase
        self.out.flush()

    def _phase(self, failure: Failure, phase: str, now: float) -> str:
        if phase == "failed":
            return (f"{failure.kind.upper()} FAILURE: {failure.target} down for "
                    f"{now - failure.t_fail:.1f} s")
        if phase == "restored":
            return f"{failure.target} restored {now - failure.t_restore:.1f} s ago"
        return "flows running; a link fails in a moment"

    def frame(self, run: FlowRun, failure: Failure, phase: str, now: float) -> list[str]:
        bins = run.snapshot()
        now_bin = int((now - run.t0) / run.bin_s) - 2  # the receiver reports every 0.1 s
        lines = [f"{self.title}    t = {now - self._started:5.1f} s",
                 self._phase(failure, phase, now), "",
                 f"{'flow':<22}{'Mb/s':>6}  last {COLUMNS * COLUMN_BINS * run.bin_s:.0f} s "
                 f"(one column = {COLUMN_BINS * run.bin_s * 1000:.0f} ms)"]
        for flow in run.flows:
            cols = columns(bins.get(flow.name, {}), now_bin, run.bin_s)
            lines.append(f"{flow.name:<22}{statistics.mean(cols[-5:]):6.2f}  "
                         f"{sparkline(cols, self.nominal_mbps * 1.5)}")
        if failure.t_fail:
            with run.lock:
                gaps = {name: list(g) for name, g in run.lossy_gaps.items()}
            hit = {f.name: loss_window(gaps.get(f.name, []), failure.t_fail, 60.0,
                                       span=failure.kind == "silent") for f in run.flows}
            hit = {k: v for k, v in hit.items() if v > 0}
            lines += ["", "loss window: " + (", ".join(
                f"{k} {v * 1000:.0f} ms" for k, v in hit.items()) or "no flow lost packets")]
        changes = [e for e in self.events if e.rerouted is not None or e.error]
        lines += ["", "controller link events:"]
        lines += [f"  {e}" for e in changes[-6:]] or ["  (none yet)"]
        return lines

    def line(self, run: FlowRun, failure: Failure, phase: str, now: float) -> str:
        bins = run.snapshot()
        now_bin = int((now - run.t0) / run.bin_s) - 2
        rates = [columns(bins.get(f.name, {}), now_bin, run.bin_s)[-5:] for f in run.flows]
        shown = " ".join(f"{statistics.mean(r):.2f}" for r in rates)
        return f"t={now - self._started:5.1f}s  [{phase:>8}] Mb/s per flow: {shown}"


def write_results(result: ResultDir, trial: TrialResult) -> Path:
    result.write_csv("outcomes.csv", trial.outcome_rows(), OUTCOME_FIELDS)
    result.write_csv("timeline.csv", trial.timeline_rows(), TIMELINE_FIELDS)
    result.write_csv("events.csv", trial.event_rows(), EVENT_FIELDS)
    return plot_timeline(result)


def report(trial: TrialResult, out: TextIO) -> None:
    out.write(f"\n{trial.kind} failure of {trial.failure.target}: per flow\n")
    out.write(f"  {'flow':<22}{'loss window':>12}{'lost':>7}{'back to full':>14}\n")
    for o in trial.outcomes:
        back = "-" if o.recovery_s is None else f"{o.recovery_s:.2f} s"
        window = f"{o.loss_window_s * 1000:.0f} ms" if o.crossed else "not crossed"
        out.write(f"  {o.flow:<22}{window:>12}{o.lost:>7}{back:>14}\n")
    for e in trial.events:
        if e.rerouted is not None:
            out.write(f"  controller: {e}\n")


def run_demo(*, kind: str = "downlink", fabric: str = "hpn7", target: str = "p4switch",
             before_s: float = 5.0, fail_s: float = 6.0, after_s: float = 4.0,
             pps: float = 100.0, flows_per_pair: int = 4, out: Path | None = None,
             base: Path = Path("results"), stream: TextIO = sys.stdout,
             tty: bool | None = None, spec: FabricSpec | None = None) -> Path:
    """Run the demo; returns the timeline plot's path. `spec` replaces the built fabric."""
    spec = spec or build_fabric(fabric)
    result = ResultDir(allocate("demo", out, base))
    params = {"fabric": fabric, "kind": kind, "before_s": before_s, "fail_s": fail_s,
              "after_s": after_s, "pps": pps, "size": 256, "flows_per_pair": flows_per_pair,
              "drop": 0.3}
    result.write_params("demo", params, target=target, fabric=fabric)
    tty = stream.isatty() if tty is None else tty
    stream.write(f"Bringing up {spec.name} ({len(spec.switches)} switches, "
                 f"{len(spec.host_nics())} NICs) on {target}...\n")
    stream.flush()
    started = time.monotonic()
    with FailoverLab(spec, target=target, log_dir=result.path / "logs") as lab:
        stream.write(f"fabric up and routed in {time.monotonic() - started:.1f} s\n")
        nominal = pps * params["size"] * 8 / 1e6
        view = LiveView(f"AI Fabric Lab: {spec.name} on {target}, {kind} failure demo",
                        nominal, stream, tty, events=lab.rc.events if lab.rc else [])
        trial = run_trial(lab, kind, 0, params, on_tick=view.tick)
    report(trial, stream)
    plot = write_results(result, trial)
    result.update_params(status="complete", plots=[plot.name])
    stream.write(f"\ntimeline plot: {plot}\n")
    stream.flush()
    return plot
