"""One failover trial: flows run, a link (or a ToR) fails, comes back; what each flow lost.

Before the flows start, each one's path is traced (`FailoverLab.trace_paths`); the failed link is
the candidate of its kind that the most flows cross (`pick_failure`), so the failure always hits traffic and every
flow's outcome says whether it crossed what failed:
- `uplink`: a source ToR's uplink (the ToR's own data plane skips the dead ECMP member);
- `downlink`: an aggregation switch's link down to a destination ToR (only the controller can
  steer the upstream switches away from it);
- `tor`: every link of a source ToR of dual-homed NICs (the NIC's other port takes over);
- `silent`: a source ToR's uplink starts dropping a fraction of its frames while staying up
  (found by the link probes, then isolated by the controller).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from experiments.framework.failover_lab import (
    FailoverLab,
    Failure,
    Flow,
    FlowRun,
    pick_failure,
)
from experiments.framework.recovery import FlowRecovery, outcome


@dataclass
class TrialResult:
    kind: str
    trial: int
    failure: Failure
    flows: list[Flow]
    t0: float
    bin_s: float
    outcomes: list[FlowRecovery]
    bins: dict[str, dict[int, int]]
    events: list = field(default_factory=list)  # LinkEvents of this trial
    kernel_drops: int | None = None  # frames the switches' receive rings dropped (None: unknown)

    def outcome_rows(self) -> list[dict]:
        events = [e for e in self.events if e.rerouted is not None and not e.up]
        first = min(events, key=lambda e: e.seen, default=None)
        return [{"kind": self.kind, "trial": self.trial, "target": self.failure.target,
                 "flow": o.flow, "crossed": int(o.crossed), "affected": int(o.affected),
                 "loss_window_ms": round(o.loss_window_s * 1000, 2), "lost": o.lost,
                 "lost_at_restore": o.lost_at_restore,
                 "recovery_s": "" if o.recovery_s is None else o.recovery_s,
                 "recovered": int(o.recovered),
                 "controller_detect_ms": "" if first is None
                 else round((first.seen - self.failure.t_fail) * 1000, 1),
                 "controller_reroute_ms": "" if first is None
                 else round(first.reroute_s * 1000, 1),
                 "switch_rx_dropped": "" if self.kernel_drops is None else self.kernel_drops}
                for o in self.outcomes]

    def timeline_rows(self) -> list[dict]:
        rows = []
        t_fail = self.failure.t_fail - self.t0
        for name, series in self.bins.items():
            for index in sorted(series):
                t = index * self.bin_s - t_fail
                rows.append({"kind": self.kind, "trial": self.trial, "flow": name,
                             "t_s": round(t, 4),
                             "goodput_bps": round(series[index] * 8 / self.bin_s, 1)})
        return rows

    def event_rows(self) -> list[dict]:
        return [{"kind": self.kind, "trial": self.trial, "link": e.link,
                 "state": "up" if e.up else "down", "source": e.source,
                 "t_s": round(e.seen - self.failure.t_fail, 4),
                 "reroute_ms": "" if e.reroute_s is None else round(e.reroute_s * 1000, 1),
                 "writes": e.writes, "error": e.error} for e in self.events]


def run_trial(lab: FailoverLab, kind: str, trial: int, params: dict, *,
              on_tick: Callable[[FlowRun, Failure, str], None] | None = None) -> TrialResult:
    """Flows for `before_s`, failure for `fail_s`, restored for `after_s`; then outcomes.

    `on_tick(run, failure, phase)` is called about every 0.1 s (live views)."""
    flows = lab.plan_flows(lab.default_pairs(), params["flows_per_pair"])
    paths = lab.trace_crossing(flows, [kind])
    failure = pick_failure(lab, kind, flows, paths)
    events_before = len(lab.rc.events) if lab.rc else 0
    drops_before = lab.kernel_drops()
    with lab.start_flows(flows, pps=params["pps"], size=params["size"]) as run:

        def hold(seconds: float, phase: str) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if on_tick:
                    on_tick(run, failure, phase)
                time.sleep(min(0.1, max(0.0, end - time.monotonic())))  # the view's refresh

        hold(params["before_s"], "before")
        lab.fail(failure, params["drop"])
        hold(params["fail_s"], "failed")
        lab.restore(failure)
        hold(params["after_s"], "restored")
        t_end = time.time()
    silent = [f.name for f in flows if f.name not in run.results]
    if silent:
        raise RuntimeError(f"no packet of {', '.join(silent)} arrived: the fabric does not "
                           f"forward (see the switch logs in the result directory)")
    bins = run.snapshot()
    kernel_drops = lab.kernel_drops_since(drops_before)
    horizon = params["fail_s"]
    outcomes = [outcome(f.name, run.results.get(f.name, {}), bins.get(f.name, {}), run.bin_s,
                        run.t0, failure.t_fail, horizon, span=kind == "silent",
                        crossed=lab.crosses(kind, failure.target, paths[f.name]),
                        t_restore=failure.t_restore, t_end=t_end)
                for f in flows]
    events = list(lab.rc.events[events_before:]) if lab.rc else []
    return TrialResult(kind, trial, failure, flows, run.t0, run.bin_s, outcomes, bins, events,
                       kernel_drops)
