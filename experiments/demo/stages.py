"""The demo's recoveries, back to back on one fabric with one set of flows running throughout.

Each stage fails what its kind names, holds the failure, restores it and waits for the fabric to
settle before the next one:
- `uplink`: a source ToR's uplink; the ToR's own data plane skips the dead ECMP member at once
  (fast failover: nothing to see);
- `downlink`: an aggregation switch's link down to the destination ToR; only the controller can
  steer the source ToRs away from it (a short gap, the reroute time);
- `silent`: a source ToR's uplink silently drops 30% of its frames; the link probes find it and
  the controller isolates it (a long, lossy stretch);
- `tor`: a whole source ToR of dual-homed NICs (the NIC's other port takes over);
- `none`: the downlink failure again with the controller's loops paused: no failover at all,
  the flows that crossed it stay dark until the link is repaired (for contrast).

Flows are traced once before they start; each stage fails the candidate of its kind that the
most flows cross.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.reconverge import LinkEvent
from experiments.demo.measure import TAIL_S
from experiments.framework.failover_lab import (
    FailoverLab,
    Failure,
    Flow,
    FlowRun,
    pick_failure,
    settle,
)

STAGE_KINDS = ("uplink", "downlink", "silent", "tor", "none")
DEFAULT_KINDS = ("uplink", "downlink", "silent")
# probes judge 1 s rounds and isolate after 2 bad ones (~2-3 s); an isolated link carries only
# the probes, too few to count as lossy, so after 3 rounds they give it back while it still drops
# (~5 s after the failure): the demo restores it before that
SILENT_MIN_HOLD_S = 4.0
# the kinds the controller recovers by rewriting routes: their failure is held until that rewrite
# is done and the flows have shown `TAIL_S` of recovery (a busy machine's probe rounds and writes
# run late: 4 s on a quiet machine, 12.6 s once beside a benchmark), at most
# `REROUTE_MAX_HOLD_S` after the failure
REROUTED_KINDS = ("downlink", "silent")
REROUTE_MAX_HOLD_S = 30.0
TITLES = {"uplink": "data-plane fast failover", "downlink": "controller reroute",
          "silent": "silent drop found by the probes", "tor": "dual-homed NIC moves to its other ToR",
          "none": "no failover at all (controller paused)"}


@dataclass
class Stage:
    """One failure of the sequence; times are epoch seconds (0: not reached)."""

    kind: str
    failure: Failure
    hold_s: float
    crossing: list[str] = field(default_factory=list)  # flows whose traced path crosses it
    t_settled: float = 0.0

    @property
    def title(self) -> str:
        return TITLES[self.kind]


class EventLog:
    """The controller's link events across pauses of its loop (a paused loop is a new one)."""

    def __init__(self, lab: FailoverLab):
        self.lab = lab
        self.earlier: list = []
        self._paused: tuple[bool, bool] = (False, False)  # (reconverger, probes) were running

    def __call__(self) -> list:
        return self.earlier + (list(self.lab.rc.events) if self.lab.rc else [])

    def pause(self) -> None:
        """Stop the reconvergence loop and the probes (their events are kept)."""
        if self.lab.rc is not None:
            self.earlier += list(self.lab.rc.events)
        self._paused = self.lab.session.stop_loops()

    def resume(self) -> None:
        """Start again what `pause` stopped."""
        self.lab.start_loops(*self._paused)


Tick = Callable[[FlowRun, "Stage | None", str], None]


def rerouter_running(lab: FailoverLab, kind: str) -> bool:
    """Whether the controller's loops that reroute around a failure of `kind` run: the
    reconvergence loop, and for a silent drop the probes too."""
    return lab.rc is not None and (kind != "silent" or lab.prober is not None)


def rerouted_at(events: Sequence[LinkEvent], stage: Stage) -> float | None:
    """When the controller finished rerouting around the stage's failed link (None: not yet)."""
    target = set(stage.failure.target.split("~"))
    done = [e.rerouted for e in events if not e.up and e.rerouted is not None
            and set(e.link.split("~")) == target and e.seen >= stage.failure.t_fail - 0.05]
    return min(done, default=None)


def failure_kind(kind: str) -> str:
    """The failure a stage of `kind` plans for (a "none" stage: a downlink it never fails)."""
    return "downlink" if kind == "none" else kind


def plan_stages(lab: FailoverLab, kinds: list[str], flows: list[Flow],
                paths: Mapping[str, frozenset[tuple[str, int]]], hold_s: float) -> list[Stage]:
    """One stage per kind, each failing the candidate of its kind the most flows cross."""
    stages = []
    for kind in kinds:
        if kind not in STAGE_KINDS:
            raise ValueError(f"unknown demo stage {kind!r}; choose from {', '.join(STAGE_KINDS)}")
        if kind == "tor" and not all(lab.dual_homed(f.src) for f in flows):
            raise ValueError(f"{lab.spec.name}: the sources are single-homed; no tor stage")
        fail_kind = failure_kind(kind)
        failure = pick_failure(lab, fail_kind, flows, dict(paths))
        failure = Failure(fail_kind, failure.target)
        hold = max(hold_s, SILENT_MIN_HOLD_S) if kind == "silent" else hold_s
        crossing = [f.name for f in flows if lab.crosses(fail_kind, failure.target, paths[f.name])]
        stages.append(Stage(kind, failure, hold, crossing))
    return stages


def run_stages(lab: FailoverLab, run: FlowRun, stages: list[Stage], events: EventLog, *,
               before_s: float, between_s: float, after_s: float, drop: float = 0.3,
               on_tick: Tick | None = None, tick_s: float = 0.05) -> None:
    """Flows for `before_s`, then every stage (fail, hold, restore, settle, `between_s`). A
    stage of `REROUTED_KINDS` holds on past its `hold_s` until the controller has rerouted, when
    its loops run (`hold_s` then records the failure's whole length)."""

    def hold(seconds: float, stage: Stage | None, phase: str) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if on_tick:
                on_tick(run, stage, phase)
            time.sleep(min(tick_s, max(0.0, end - time.monotonic())))  # the views' refresh

    hold(before_s, None, "before")
    for i, stage in enumerate(stages):
        if stage.kind == "none":
            events.pause()
        lab.fail(stage.failure, drop)
        hold(stage.hold_s, stage, "failed")
        if stage.kind in REROUTED_KINDS and rerouter_running(lab, stage.kind):
            cap = stage.failure.t_fail + REROUTE_MAX_HOLD_S
            while (done := rerouted_at(events(), stage)) is None and time.time() < cap:
                hold(tick_s, stage, "failed")
            if done is not None:
                hold(done + TAIL_S + 0.1 - time.time(), stage, "failed")
            stage.hold_s = round(time.time() - stage.failure.t_fail, 3)
        lab.restore(stage.failure)
        if stage.kind == "none":
            events.resume()
        deadline = time.monotonic() + 15.0
        while True:  # the probes give a silently dropping link back after a few good rounds
            if on_tick:
                on_tick(run, stage, "settling")
            try:
                settle(lab, timeout=0.2)
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
        stage.t_settled = time.time()
        last = i == len(stages) - 1
        hold(after_s if last else between_s, stage, "restored")
