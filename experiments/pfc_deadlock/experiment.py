"""Experiment `pfc-deadlock`: a cyclic buffer dependency deadlocks PFC; the watchdog breaks it;
the controller's dependency check prevents it; the watchdog's false positives in an incast.

    fabric-lab run pfc-deadlock --quick
    fabric-lab run pfc-deadlock -p settings=off,drop -p detection_ms=100

A ring of four switches (`ring.py`), one host on each, PFC on priority 3. Every host sends to
the host two switches on, and the routes take the clockwise way (a routing policy, not the
shortest-path ECMP the controller computes): flow i crosses r_i -> r_i+1 -> r_i+2, so each ring
queue carries two flows and feeds the next (a cycle of four channel dependencies). The ring
queues drain `ring_pps`, less than the two flows offer: they fill, pause their upstream, and
once all four are paused none can ever send again. Settings:
- `off`: no watchdog: the deadlock forms and persists after the senders stop;
- `drop` / `forward`: p4switch's traffic-manager watchdog (`pfc_watchdog`, SONiC semantics:
  `detection_ms`, `restoration_ms`) on every switch: time to detect, time until the ring is
  empty, packets it dropped;
- `prevent`: the controller's check (controller/deadlock.py) refuses the clockwise routes and
  installs shortest-path routes pruned to an acyclic set; the same traffic forms no deadlock.
Then the false-positive sweep: a 3:1 incast (healthy: no cycle) under the watchdog at each
`sweep_ms` detection time, counting queues declared stuck and the packets dropped.

p4switch only: BMv2 cannot stop a queue (its pause agent slows it to a share of its rate,
docs/mechanisms/pfc.md), so a BMv2 ring keeps trickling and never deadlocks.

The P4 program (p4src/include/pfc.p4) refreshes pauses on packet events only: in a frozen ring
no packet moves, and its pauses (quanta 4000 at `link_mbps` 20: 102 ms) would run out. A switch
MAC holds XOFF while its buffer holds the paused port's traffic; p4switch does that with
`pfc_hold <packets>` (p4switch/switch/pfc.py), set to `hold` packets on every switch.
Output: `summary.csv` (one row per setting), `sweep.csv` (one per detection time),
`events.csv` (the watchdogs' events), `timeseries.csv` (ring queue samples); plots.
"""

from __future__ import annotations

import time
from typing import Any

from controller.deadlock import CyclicDependency, acyclic_routes, check_routes
from controller.routes import compute_routes
from experiments.framework import Experiment, ExperimentError, RunContext, isolated
from experiments.framework.telemetry import COLUMNS
from experiments.pfc_deadlock.lab import DeadlockLab
from experiments.pfc_deadlock.measure import (
    drained_at,
    events_to_t,
    hold_window,
    last_move,
)
from experiments.pfc_deadlock.plots import plot
from experiments.pfc_deadlock.ring import clockwise_routes, ring_fabric

SETTINGS = ("off", "drop", "forward", "prevent")
SUMMARY_FIELDS = ["setting", "routes", "deadlocked", "ring_sent_after_stop",
                  "ring_throughput_pps", "ring_depths", "all_paused", "froze_at_s",
                  "detections", "detect_s", "drained_s", "restorations", "lossless_s",
                  "watchdog_dropped", "detection_ms", "restoration_ms",
                  "late_detect_s", "late_drained_s", "late_lossless_s", "late_dropped"]
SWEEP_FIELDS = ["detection_ms", "restoration_ms", "false_stuck", "queues_stuck",
                "watchdog_dropped", "incast_pps", "senders"]
EVENT_FIELDS = ["setting", "switch", "kind", "t_s", "port", "priority", "dropped"]
SERIES_FIELDS = ["setting", *COLUMNS]


def _queues(lab: DeadlockLab) -> list[tuple[str, int]]:
    return [(sw, port) for sw, port, _prio in lab.ring_queues()]


def run_setting(lab: DeadlockLab, setting: str, agents: dict, ctx: RunContext
                ) -> tuple[dict[str, Any], list[dict], list[dict]]:
    p = ctx.params
    spec = lab.spec
    clockwise = clockwise_routes(spec, compute_routes(spec))
    routes = "clockwise"
    if setting == "prevent":
        try:
            check_routes(spec, clockwise)
            raise ExperimentError("the dependency check accepted the clockwise ring routes")
        except CyclicDependency as refused:
            ctx.progress(f"pfc-deadlock: prevent: controller refused the routes: {refused}")
        lab.install(acyclic_routes(spec, compute_routes(spec)))
        routes = "acyclic (refused clockwise)"
    else:
        lab.install(clockwise)
    action = setting if setting in ("drop", "forward") else None
    lab.watchdog(action, p["detection_ms"], p["restoration_ms"])
    mono_offset = time.time() - time.monotonic()
    rows, t0 = lab.drive(agents, lab.ring_flows(), p["flow_pps"], p["send_s"], p["hold_s"])
    events = events_to_t(lab.watchdog_events(), t0, mono_offset) if action else []
    queues = _queues(lab)
    window = hold_window(rows, queues, p["send_s"] + 0.3, p["send_s"] + p["hold_s"])
    end = max(r["t_s"] for r in rows)
    stuck = [e for e in events if e["kind"] == "stuck"]
    restored = [e for e in events if e["kind"] == "restored"]
    first = stuck[0]["t_s"] if stuck else None
    froze = last_move(rows, queues, end)
    # the first queue declared stuck: since when had it sent nothing (sample resolution)?
    moved = (last_move(rows, [(stuck[0]["switch"], stuck[0]["port"])], first)
             if first is not None else None)
    drained = drained_at(rows, queues, first) if first is not None else None
    summary = {
        "setting": setting, "routes": routes, "deadlocked": window["deadlocked"],
        "ring_sent_after_stop": window["ring_sent"],
        "ring_throughput_pps": window["ring_throughput_pps"],
        "ring_depths": " ".join(map(str, window["ring_depths"])),
        "all_paused": all(q["frozen"] for q in window["queues"].values()),
        "froze_at_s": froze,
        "detections": len(stuck),
        "detect_s": round(first - moved, 3) if first is not None and moved is not None else None,
        "drained_s": round(drained - first, 3) if drained is not None and first else None,
        "restorations": len(restored),
        "lossless_s": (round(max(e["t_s"] for e in restored) - first, 3)
                       if restored and first is not None else None),
        "watchdog_dropped": sum(e["dropped"] for e in restored),
        "detection_ms": p["detection_ms"] if action else None,
        "restoration_ms": p["restoration_ms"] if action else None,
    }
    if setting == "off":  # the deadlock stands: now the watchdog comes
        summary.update(late_watchdog(lab, p))
    for row in rows:
        row["setting"] = setting
    return summary, rows, [{**e, "setting": setting} for e in events]


def _restored(lab: DeadlockLab, deadline: float) -> list[dict[str, Any]]:
    """The watchdog events once every queue it declared stuck has been restored (or at
    `deadline`): a busy machine's switch may restore later than its restoration time says."""
    while True:
        events = lab.watchdog_events()
        queues = {kind: {(e["switch"], e["port"], e["priority"]) for e in events
                         if e["kind"] == kind} for kind in ("stuck", "restored")}
        if (queues["stuck"] and queues["stuck"] <= queues["restored"]) \
                or time.monotonic() >= deadline:
            return events
        time.sleep(0.05)  # the watchdog polls every quarter of its detection time


def late_watchdog(lab: DeadlockLab, p: dict[str, Any]) -> dict[str, Any]:
    """Turn the watchdog (drop) on over a standing deadlock: seconds from then until the
    first queue is declared stuck, until every ring queue is empty, until the last is lossless
    again; packets it dropped."""
    t_on = time.monotonic()
    lab.watchdog("drop", p["detection_ms"], p["restoration_ms"])
    deadline = t_on + (p["detection_ms"] + p["restoration_ms"]) / 1000 + 5.0
    drained = None
    while time.monotonic() < deadline:
        if all(lab.channels[sw].queue_stats(port, prio)["depth"] == 0
               for sw, port, prio in lab.ring_queues()):
            drained = time.monotonic()
            break
        time.sleep(0.01)
    events = _restored(lab, time.monotonic() + p["restoration_ms"] / 1000 + 5.0)
    stuck = [e["t"] for e in events if e["kind"] == "stuck"]
    restored = [e for e in events if e["kind"] == "restored"]
    return {"late_detect_s": round(min(stuck) - t_on, 3) if stuck else None,
            "late_drained_s": round(drained - t_on, 3) if drained is not None else None,
            "late_lossless_s": (round(max(e["t"] for e in restored) - t_on, 3)
                                if restored else None),
            "late_dropped": sum(e["dropped"] for e in restored)}


def run_sweep(lab: DeadlockLab, detection_ms: int, agents: dict, ctx: RunContext
              ) -> tuple[dict[str, Any], list[dict]]:
    """A healthy 3:1 incast (acyclic routes) under the watchdog at `detection_ms`."""
    p = ctx.params
    spec = lab.spec
    lab.install(acyclic_routes(spec, compute_routes(spec)))
    lab.watchdog("drop", detection_ms, p["restoration_ms"])
    mono_offset = time.time() - time.monotonic()
    flows = lab.incast_flows()
    _rows, t0 = lab.drive(agents, flows, p["incast_pps"], p["incast_s"], 0.5)
    events = events_to_t(lab.watchdog_events(), t0, mono_offset)
    stuck = [e for e in events if e["kind"] == "stuck"]
    return ({"detection_ms": detection_ms, "restoration_ms": p["restoration_ms"],
             "false_stuck": len(stuck),
             "queues_stuck": len({(e["switch"], e["port"], e["priority"]) for e in stuck}),
             "watchdog_dropped": sum(e["dropped"] for e in events if e["kind"] == "restored"),
             "incast_pps": p["incast_pps"], "senders": len(flows)},
            [{**e, "setting": f"incast {detection_ms} ms"} for e in events])


def run(ctx: RunContext) -> None:
    p = ctx.params
    unknown = [s for s in p["settings"] if s not in SETTINGS]
    if unknown:
        raise ExperimentError(f"unknown setting(s) {', '.join(unknown)}; "
                              f"choose from {', '.join(SETTINGS)}")
    spec = isolated(ring_fabric(4), p)
    summaries: list[dict] = []
    series: list[dict] = []
    events: list[dict] = []
    sweep: list[dict] = []
    with DeadlockLab(spec, p, ctx.out.path / "logs", ctx.target) as lab:
        lab.configure_pfc()
        agents = {nic.name: lab.agent(nic.name) for nic in spec.host_nics()}
        ctx.progress(f"pfc-deadlock: ring of {len(spec.switches)} up, PFC on")
        for setting in p["settings"]:
            summary, rows, evs = run_setting(lab, setting, agents, ctx)
            summaries.append(summary)
            series += rows
            events += evs
            ctx.progress(f"pfc-deadlock: {setting}: deadlocked {summary['deadlocked']}, "
                         f"ring sent {summary['ring_sent_after_stop']} after the senders "
                         f"stopped, depths {summary['ring_depths']}, detections "
                         f"{summary['detections']} (detect {summary['detect_s']} s, drained "
                         f"{summary['drained_s']} s, lossless {summary['lossless_s']} s "
                         f"later), dropped {summary['watchdog_dropped']}")
            if setting == "off":
                ctx.progress(f"pfc-deadlock: off, then the watchdog (drop): stuck after "
                             f"{summary['late_detect_s']} s, ring empty after "
                             f"{summary['late_drained_s']} s, lossless after "
                             f"{summary['late_lossless_s']} s, {summary['late_dropped']} "
                             "packets dropped")
            ctx.out.write_csv("summary.csv", summaries, SUMMARY_FIELDS)
            ctx.out.write_csv("timeseries.csv", series, SERIES_FIELDS)
            ctx.out.write_csv("events.csv", events, EVENT_FIELDS)
            lab.drain()
        for detection_ms in p["sweep_ms"]:
            row, evs = run_sweep(lab, detection_ms, agents, ctx)
            sweep.append(row)
            events += evs
            ctx.progress(f"pfc-deadlock: incast, detection {detection_ms} ms: "
                         f"{row['false_stuck']} false detections on {row['queues_stuck']} "
                         f"queues, {row['watchdog_dropped']} packets dropped")
            ctx.out.write_csv("sweep.csv", sweep, SWEEP_FIELDS)
            ctx.out.write_csv("events.csv", events, EVENT_FIELDS)
            lab.drain()


EXPERIMENT = Experiment(
    name="pfc-deadlock",
    summary="PFC deadlock on a ring with a cyclic buffer dependency: formed, persisting, broken "
            "by the watchdog (drop/forward), prevented by the routes' dependency check; the "
            "watchdog's false positives in a healthy incast",
    duration="about 40 s with --quick, 50 s in full; Mininet + p4switch, root",
    defaults={"settings": list(SETTINGS), "ring_pps": 1600, "host_pps": 2400,
              "flow_pps": 1200, "depth": 64, "xoff": 16, "xon": 4, "quanta": 4000,
              "refresh_us": 20_000, "link_mbps": 20.0, "hold": 4, "send_s": 2.0, "hold_s": 2.0,
              "sample_ms": 50, "detection_ms": 400, "restoration_ms": 400,
              "sweep_ms": [10, 25, 50, 100, 200, 400], "incast_pps": 2400, "incast_s": 2.0,
              "name_prefix": "dl", "port_base": 29000},
    quick={"send_s": 1.5, "hold_s": 1.5, "sweep_ms": [25, 200, 400], "incast_s": 1.5},
    run=run,
    plot=plot,
    fabrics=(),
    scalable=False,
    needs_root=True,
    targets=("p4switch",),  # BMv2 slows a paused queue, never stops it: no deadlock
    tags=("congestion", "pfc", "deadlock", "mininet"),
)
