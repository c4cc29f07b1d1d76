"""The demo's terminal view: per-flow sparklines redrawn five times a second.

On a terminal the screen is redrawn in place: one row per flow with its rate now, a sparkline of
the last 3 s in 50 ms columns (a column in which the flow lost packets, from its sequence
numbers, is drawn red, so a 50 ms outage is plain), and the loss window the current failure
cost it; then the stages so
far with their results and the controller's link events. Without a terminal (CI, a pipe) it
prints a line per second and a line per phase and event instead.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TextIO

from experiments.demo.stages import Stage
from experiments.framework.failover_lab import FlowRun
from experiments.framework.recovery import loss_window

BLOCKS = " ▁▂▃▄▅▆▇█"
COLUMN_BINS = 5  # one sparkline column = 50 ms of 10 ms bins
COLUMNS = 60  # 3 s
RED, DIM, BOLD, RESET = "\x1b[31m", "\x1b[2m", "\x1b[1m", "\x1b[0m"
LAG_BINS = 2  # the receivers report every 0.1 s: the newest bins are not in yet


def sparkline(values: list[float], full: float) -> str:
    """One block character per value, scaled so that `full` is the tallest block."""
    out = []
    for v in values:
        level = 0 if full <= 0 else round(min(v / full, 1.0) * (len(BLOCKS) - 1))
        out.append(BLOCKS[level])
    return "".join(out)


def columns(series: Mapping[int, int], now_bin: int, bin_s: float,
            width: int = COLUMNS, per: int = COLUMN_BINS) -> list[float]:
    """Mb/s per column of `per` bins, the last `width` columns ending at `now_bin`."""
    out = []
    for c in range(width, 0, -1):
        end = now_bin - (c - 1) * per
        cells = [series.get(i, 0) for i in range(end - per, end)]
        out.append(sum(cells) * 8 / (per * bin_s) / 1e6)
    return out


def lossy_columns(gaps: list, now_bin: int, t0: float, bin_s: float,
                  width: int = COLUMNS, per: int = COLUMN_BINS) -> list[bool]:
    """Per column: whether a silence that lost packets (start, end, lost) overlaps it."""
    spans = [((g[0] - t0) / bin_s, (g[1] - t0) / bin_s) for g in gaps if len(g) > 2 and g[2]]
    out = []
    for c in range(width, 0, -1):
        end = now_bin - (c - 1) * per
        out.append(any(a < end and b > end - per for a, b in spans))
    return out


def recent(run: FlowRun, first: int, last: int) -> dict[str, dict[int, int]]:
    """The flows' bins first..last-1 (a long run holds many more: no copy of them all)."""
    with run.lock:
        return {name: {i: series[i] for i in range(first, last) if i in series}
                for name, series in run.bins.items()}


@dataclass
class LiveView:
    """Draws the flows; `tick(run, stage, phase)` is called about every 50 ms while flows run."""

    title: str
    nominal_mbps: float
    out: TextIO = sys.stdout
    tty: bool = False
    events: Callable[[], list] = list
    results: list[str] = field(default_factory=list)  # one line per finished stage
    notes: list[str] = field(default_factory=list)  # shown under the title (the web view's URL)
    every_s: float = 0.2  # redraw interval on a terminal
    line_every_s: float = 1.0  # interval of plain lines otherwise
    _last: float = 0.0
    _phase_seen: tuple = ()
    _printed: set[int] = field(default_factory=set)  # events already printed
    _started: float = field(default_factory=time.time)

    def tick(self, run: FlowRun, stage: Stage | None, phase: str) -> None:
        now = time.time()
        if now - self._last < (self.every_s if self.tty else self.line_every_s):
            return
        self._last = now
        if self.tty:
            self.out.write("\x1b[H\x1b[J" + "\n".join(self.frame(run, stage, phase, now)) + "\n")
        else:
            if (id(stage), phase) != self._phase_seen:
                self.out.write(f"--- {self.phase_text(stage, phase, now)}\n")
            for event in self.events():  # a reroute finishes after its event is recorded
                if (event.rerouted is not None or event.error) and id(event) not in self._printed:
                    self._printed.add(id(event))
                    self.out.write(f"--- controller: {event}\n")
            self.out.write(self.line(run, stage, phase, now) + "\n")
        self._phase_seen = (id(stage), phase)
        self.out.flush()

    @staticmethod
    def phase_text(stage: Stage | None, phase: str, now: float) -> str:
        if stage is None:
            return "flows running; the first link fails in a moment"
        failure = stage.failure
        if phase == "failed":
            return (f"{stage.kind.upper()} FAILURE ({stage.title}): {failure.target} down "
                    f"for {now - failure.t_fail:.1f} s")
        if phase == "settling":
            return f"{failure.target} restored; waiting for the controller to take it back"
        return f"{failure.target} restored {now - failure.t_restore:.1f} s ago"

    def _paint(self, values: list[float], lossy: list[bool]) -> str:
        line = sparkline(values, self.nominal_mbps * 1.25)
        if not self.tty:
            return line
        return "".join(f"{RED}{'▁' if ch == ' ' else ch}{RESET}" if hole else ch
                       for ch, hole in zip(line, lossy, strict=True))

    def frame(self, run: FlowRun, stage: Stage | None, phase: str, now: float) -> list[str]:
        now_bin = int((now - run.t0) / run.bin_s) - LAG_BINS
        bins = recent(run, now_bin - COLUMNS * COLUMN_BINS, now_bin)
        with run.lock:
            gaps = {name: list(g) for name, g in run.lossy_gaps.items()}
        span = COLUMNS * COLUMN_BINS * run.bin_s
        lines = [f"{BOLD}{self.title}{RESET}    t = {now - self._started:5.1f} s",
                 *self.notes, self.phase_text(stage, phase, now), "",
                 f"{'flow':<24}{'Mb/s':>6}  last {span:.0f} s, one column = "
                 f"{COLUMN_BINS * run.bin_s * 1000:.0f} ms ({RED}red{RESET}: packets lost)"
                 f"{'':12}loss window"]
        windows = self._windows(gaps, run, stage)
        for flow in run.flows:
            series = bins.get(flow.name, {})
            cols = columns(series, now_bin, run.bin_s)
            mark = "*" if stage is not None and flow.name in stage.crossing else " "
            window = windows.get(flow.name)
            shown = "" if window is None else (f"{window * 1000:5.0f} ms" if window else "    0 ms")
            lines.append(f"{mark}{flow.name:<23}{statistics.mean(cols[-4:]):6.2f}  "
                         f"{self._paint(cols, lossy_columns(gaps.get(flow.name, []), now_bin, run.t0, run.bin_s))}"
                         f"  {shown}")
        if stage is not None:
            lines.append(f"{DIM}* crosses {stage.failure.target}{RESET}")
        lines += ["", "stages:"] + ([f"  {r}" for r in self.results] or ["  (none yet)"])
        changes = [e for e in self.events() if e.rerouted is not None or e.error]
        lines += ["", "controller link events:"]
        lines += [f"  {e}" for e in changes[-6:]] or ["  (none yet)"]
        return lines

    @staticmethod
    def _windows(gaps: dict[str, list], run: FlowRun, stage: Stage | None) -> dict[str, float]:
        """Loss window so far of each flow in the current stage (none before the first)."""
        if stage is None or not stage.failure.t_fail:
            return {}
        return {f.name: loss_window(gaps.get(f.name, []), stage.failure.t_fail, stage.hold_s,
                                    span=stage.kind == "silent") for f in run.flows}

    def line(self, run: FlowRun, stage: Stage | None, phase: str, now: float) -> str:
        now_bin = int((now - run.t0) / run.bin_s) - LAG_BINS
        bins = recent(run, now_bin - 20 * COLUMN_BINS, now_bin)
        rates = [columns(bins.get(f.name, {}), now_bin, run.bin_s, width=20)
                 for f in run.flows]  # the last second
        shown = " ".join(f"{statistics.mean(r):.2f}" for r in rates)
        with run.lock:
            gaps = {name: list(g) for name, g in run.lossy_gaps.items()}
        hit = sum(any(lossy_columns(gaps.get(f.name, []), now_bin, run.t0, run.bin_s, width=20))
                  for f in run.flows)
        kind = stage.kind if stage else "-"
        return (f"t={now - self._started:5.1f}s  [{kind}:{phase}] Mb/s per flow: {shown}"
                f"  ({hit} lost packets in it)")
