"""Experiment `failover`: how long flows lose packets when a link fails, per kind of failure.

RoCEv2 flows run from the first server's NICs to the last server's, through the fabric on the
switch target, with the controller's reconvergence loop and link probes running. Each trial
traces every flow's path, fails the link of one kind (`uplink`, `downlink`, `tor`, `silent`;
see `experiments.failover.trial`) that the most flows cross, holds the failure, restores it and
lets the fabric settle. Per flow: whether it crossed what failed, the loss window (last packet
before the failure to the first after it, or for a silent drop the span of its losses; 0 when
the failover lost nothing), packets lost (and how many when the link came back), and time back
to full throughput.

Rates (docs/rates.md): every flow sends `pps` = 1600 datagrams/s of `size` = 4096 bytes,
52 Mb/s (16 packets per 10 ms bin, so the loss window is resolved to 0.6 ms), on links with an
MTU of `mtu` = 4200 (RoCE's 4096-byte path MTU; 0: the kernel's 1500, as links between the
servers of a cluster have it: `-p mtu=0 -p size=1000`), not rate-limited (`link_mbps` = 0; a rate
gives their flows nothing to show and costs a qdisc pass per frame), with queues of
`queue_pkts` = 1000, deep enough for the burst a switch sends after the busy machine kept it
off the CPU, so no queue drops a packet: every loss is the failure's. On BMv2 the flows send
120 datagrams/s of 256 bytes (`per_target`).

Files: `outcomes.csv` (one row per flow and trial), `timeline.csv` (10 ms throughput bins per
flow, time relative to the failure), `events.csv` (the controller's link events); plots
`timeline.png` (throughput per flow around the first trial of each kind, failure and restore
marked) and `loss_windows.png` (loss-window distribution per kind).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.failover.trial import run_trial
from experiments.framework import Experiment, ExperimentError, RunContext, scaled_fabric
from experiments.framework.failover_lab import KINDS, LINK_MTU, FailoverLab, relieved_pps, settle
from experiments.framework.figures import save_figure
from experiments.framework.recovery import rolling_mean
from experiments.framework.results import ResultDir

OUTCOME_FIELDS = ["kind", "trial", "target", "flow", "crossed", "affected", "loss_window_ms",
                  "lost", "lost_at_restore", "recovery_s", "recovered", "controller_detect_ms",
                  "controller_reroute_ms", "switch_rx_dropped"]
TIMELINE_FIELDS = ["kind", "trial", "flow", "t_s", "goodput_bps"]
SMOOTH_BINS = 5  # the timeline plot shows 50 ms means of the 10 ms bins
EVENT_FIELDS = ["kind", "trial", "link", "state", "source", "t_s", "reroute_ms", "writes",
                "error"]


def run(ctx: RunContext) -> None:
    params = ctx.params
    unknown = sorted(set(params["kinds"]) - set(KINDS))
    if unknown:
        raise ExperimentError(f"failover: unknown kind(s) {', '.join(unknown)}; "
                              f"choose from {', '.join(KINDS)}")
    spec = scaled_fabric(ctx.fabric or params["fabric"], params,
                         rate_mbps=params["link_mbps"] or None,  # 0: not rate-limited
                         queue_pkts=params["queue_pkts"]).with_mtu(params["mtu"] or None)
    dead: set[str] = set()  # flows that delivered nothing at the end of their trial
    with FailoverLab(spec, target=ctx.target, log_dir=ctx.out.path / "logs",
                     probe_period=params["probe_period_s"], cluster=ctx.cluster) as lab, \
            ctx.out.append_csv("outcomes.csv", OUTCOME_FIELDS) as outcomes, \
            ctx.out.append_csv("timeline.csv", TIMELINE_FIELDS) as timeline, \
            ctx.out.append_csv("events.csv", EVENT_FIELDS) as events:
        kinds = list(params["kinds"])
        if "tor" in kinds and not all(lab.dual_homed(src) for src, _ in lab.default_pairs()):
            ctx.progress(f"failover: {spec.name} NICs are single-homed: skipping kind tor")
            kinds.remove("tor")
        for kind in kinds:
            for trial in range(params["trials"]):
                result = run_trial(lab, kind, trial, params)
                outcomes.extend(result.outcome_rows())
                timeline.extend(result.timeline_rows())
                events.extend(result.event_rows())
                dead |= {f"{kind} #{trial}: {o.flow}" for o in result.outcomes
                         if not o.recovered}
                settle(lab)
                hit = [o for o in result.outcomes if o.crossed]
                worst = max((o.loss_window_s for o in hit), default=0.0)
                ctx.progress(f"failover: {kind} #{trial} ({result.failure.target}): "
                             f"{len(hit)}/{len(result.outcomes)} flows crossed it, "
                             f"{sum(o.lost > 0 for o in hit)} lost packets, longest loss "
                             f"window {worst * 1000:.0f} ms"
                             + "".join(f", {o.flow} NEVER RECOVERED"
                                       for o in result.outcomes if not o.recovered)
                             + (f"; the switches' receive rings dropped {result.kernel_drops} "
                                "frames (a busy machine, not the failover: try "
                                f"-p pps={relieved_pps(params['pps'])}, docs/rates.md)"
                                if result.kernel_drops else ""))
    for line in summary(ctx.out):
        ctx.progress(line)
    if dead:
        raise ExperimentError(f"failover: the fabric did not recover: {len(dead)} flow(s) "
                              f"delivered nothing at the end of their trial ({'; '.join(sorted(dead))}); "
                              f"see logs/ in the result directory")


def summary(result: ResultDir) -> list[str]:
    """One line per kind: median and worst loss window of the flows that crossed the failure."""
    rows = result.read_csv("outcomes.csv")
    lines = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        crossed = [r for r in rows if r["kind"] == kind and r["crossed"] == "1"]
        if not crossed:
            lines.append(f"failover: {kind}: no flow crossed the failure")
            continue
        windows = [float(r["loss_window_ms"]) for r in crossed]
        lost = [int(r["lost"]) for r in crossed]
        at_restore = sum(int(r["lost_at_restore"]) for r in rows if r["kind"] == kind)
        dead = sum(r.get("recovered") == "0" for r in rows if r["kind"] == kind)
        lines.append(f"failover: {kind}: loss window median {statistics.median(windows):.0f} ms, "
                     f"max {max(windows):.0f} ms over {len(crossed)} flows that crossed it "
                     f"({sum(n > 0 for n in lost)} lost packets; "
                     f"{statistics.median(lost):.0f} lost, median; "
                     f"{at_restore} lost in all when it came back)"
                     + (f"; {dead} flow(s) NEVER RECOVERED" if dead else ""))
    return lines


def plot(result: ResultDir) -> list[Path]:
    """Both plots once a trial is measured (a run that stopped: from the trials it ran)."""
    if not result.read_csv("outcomes.csv"):
        return []
    return [plot_timeline(result), plot_loss_windows(result)]


def plot_timeline(result: ResultDir, trial: str = "0") -> Path:
    rows = [r for r in result.read_csv("timeline.csv") if r["trial"] == trial]
    outcomes = result.read_csv("outcomes.csv")
    kinds = list(dict.fromkeys(r["kind"] for r in rows)) or ["(none)"]
    fig, axes = plt.subplots(len(kinds), 1, figsize=(9, 2.6 * len(kinds)), squeeze=False,
                             sharex=True)
    params = result.read_params().get("params", {})
    for ax, kind in zip(axes[:, 0], kinds, strict=True):
        mine = [r for r in rows if r["kind"] == kind]
        for flow in dict.fromkeys(r["flow"] for r in mine):
            pts = [(float(r["t_s"]), float(r["goodput_bps"]) / 1e6) for r in mine
                   if r["flow"] == flow]
            smooth = rolling_mean([p[1] for p in pts], SMOOTH_BINS)
            ax.plot([p[0] for p in pts], smooth, lw=0.9, label=flow)
        ax.axvline(0, color="red", ls="--", lw=1)
        if "fail_s" in params:
            ax.axvline(params["fail_s"], color="green", ls="--", lw=1)
        target = next((o["target"] for o in outcomes if o["kind"] == kind
                       and o["trial"] == trial), "")
        ax.set_title(f"{kind} failure: {target} (red: failed, green: restored)", fontsize=9)
        ax.set_ylabel("Mb/s (50 ms mean)")
    axes[-1, 0].set_xlabel("time since the failure (s)")
    axes[0, 0].legend(fontsize=6, ncol=3, loc="lower left")
    path = save_figure(fig, result.path / "timeline.png", dpi=110)
    return path


def plot_loss_windows(result: ResultDir) -> Path:
    rows = [r for r in result.read_csv("outcomes.csv") if r["crossed"] == "1"]
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    data = [[max(float(r["loss_window_ms"]), 0.1) for r in rows if r["kind"] == k]
            for k in kinds]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    if data:
        ax.boxplot(data, tick_labels=kinds, showfliers=False)
        for i, values in enumerate(data, start=1):
            ax.scatter([i] * len(values), values, s=12, alpha=0.6, zorder=3)
    ax.axhline(50, color="grey", ls=":", lw=1, label="50 ms (local failover target)")
    ax.axhline(1000, color="grey", ls="--", lw=1, label="1 s (reconvergence target)")
    ax.set_yscale("log")
    ax.set_ylabel("loss window per flow that crossed it (ms; 0 drawn at 0.1)")
    ax.set_title("Loss window by failure kind")
    ax.legend(fontsize=7)
    path = save_figure(fig, result.path / "loss_windows.png", dpi=110)
    return path


EXPERIMENT = Experiment(
    name="failover",
    summary="loss window, packets lost and recovery time when an uplink, a downlink, a "
            "dual-homed NIC's ToR or a silently dropping link fails",
    duration="about 1-1.5 min with --quick, 3 min in full; Mininet, root",
    defaults={"fabric": "hpn7", "kinds": list(KINDS), "trials": 3, "flows_per_pair": 3,
              "pps": 1600.0, "size": 4096, "link_mbps": 0.0, "queue_pkts": 1000,
              "mtu": LINK_MTU,
              "before_s": 1.5, "fail_s": 4.0, "after_s": 1.0,
              "drop": 0.3, "probe_period_s": 1.0},
    quick={"trials": 1},
    # BMv2 forwards several times fewer packets/s without loss here (docs/rates.md): at 4 Mb/s
    # per flow its queues, not the failure, would drop packets
    per_target={"bmv2": {"pps": 120.0, "size": 256}},
    run=run,
    plot=plot,
    fabrics=("hpn7", "leafspine", "aipod", "bigraph", "fattree"),
    needs_root=True,
    tags=("mininet",),
)
