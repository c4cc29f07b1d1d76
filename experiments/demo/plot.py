"""The demo's timeline plot, from its CSV files alone: one panel per stage, one lane per flow.

Each lane is a flow's received packets per 10 ms bin (its nominal rate fills the lane); the
silences in which it lost packets (`gaps.csv`, from the receivers' sequence numbers) are drawn
over it in red, so a 50 ms outage is a red bar while a late-but-complete bin (a scheduling stall
of the machine) is only a notch. The failure (red dashes), the controller's reroute or isolation
(green, with its time) and the restore (grey) are marked; each lane says the loss window that
stage cost the flow, or that it did not recover. Stages whose recovery takes well under a second
(uplink, downlink, tor) are shown from 0.5 s before the failure to 1.5 s after it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from experiments.framework.results import ResultDir

TIMELINE_FIELDS = ["flow", "t_s", "packets"]
STAGE_FIELDS = ["stage", "kind", "title", "target", "hold_s", "t_fail_s", "t_restore_s",
                "t_settled_s", "t_reroute_s", "detect_ms", "reroute_ms", "crossing"]
OUTCOME_FIELDS = ["stage", "kind", "target", "flow", "crossed", "loss_window_ms", "outage_ms",
                  "lost", "recovered"]
EVENT_FIELDS = ["link", "state", "source", "t_s", "reroute_ms", "writes", "error"]
GAP_FIELDS = ["flow", "t_start_s", "t_end_s", "lost"]
CROSSING, OTHER, LOSS = "#1f4e9c", "#9ecae1", "#d62728"
MARGIN_S = 0.6
ZOOM_S = 1.5  # shown after the failure for the fast recoveries
FAST = ("uplink", "downlink", "tor")


def _label(row: dict) -> str:
    if row["recovered"] != "1" and row["crossed"] == "1":
        return "dark until repaired" if row["kind"] == "none" else "NOT RECOVERED"
    if row["recovered"] != "1":
        return "still losing"
    if row["crossed"] != "1":  # not the failure's doing: what the busy machine cost it
        return f"lost {row['lost']} packets" if int(row["lost"]) else "no loss"
    window = float(row["loss_window_ms"])
    return f"loss {window:.0f} ms" if window > 0 else "no loss"


def plot_timeline(result: ResultDir) -> Path:
    params = result.read_params().get("params", {})
    per_bin = float(params.get("pps", 500)) * float(params.get("bin_s", 0.01))
    series: dict[str, list[tuple[float, float]]] = {}
    for row in result.read_csv("timeline.csv"):
        series.setdefault(row["flow"], []).append((float(row["t_s"]), float(row["packets"])))
    gaps: dict[str, list[tuple[float, float]]] = {}
    for row in result.read_csv("gaps.csv"):
        gaps.setdefault(row["flow"], []).append((float(row["t_start_s"]), float(row["t_end_s"])))
    stages = result.read_csv("stages.csv")
    outcomes = result.read_csv("outcomes.csv")
    flows = list(series)
    fig, axes = plt.subplots(len(stages) or 1, 1, figsize=(11, 0.42 * len(flows) * len(stages) + 1.4),
                             squeeze=False)
    for ax, stage in zip(axes[:, 0], stages, strict=False):
        t_fail, t_restore = float(stage["t_fail_s"]), float(stage["t_restore_s"])
        lo, hi = -MARGIN_S, t_restore - t_fail + MARGIN_S
        if stage["kind"] in FAST:
            lo, hi = -0.5, min(hi, ZOOM_S)
        mine = {o["flow"]: o for o in outcomes if o["stage"] == stage["stage"]}
        for lane, flow in enumerate(flows):
            y0 = len(flows) - 1 - lane
            pts = [(t - t_fail, n) for t, n in series[flow] if lo - 0.05 <= t - t_fail <= hi + 0.05]
            crossed = mine.get(flow, {}).get("crossed") == "1"
            colour = CROSSING if crossed else OTHER
            xs = [p[0] for p in pts]
            ys = [y0 + 0.85 * min(p[1] / per_bin, 1.3) / 1.3 for p in pts]
            ax.fill_between(xs, y0, ys, step="post", color=colour, alpha=0.85, lw=0)
            for start, end in gaps.get(flow, []):
                if start - t_fail < hi and end - t_fail > lo:
                    ax.add_patch(Rectangle((start - t_fail, y0), end - start, 0.85, color=LOSS,
                                           lw=0.6, zorder=3))
            label = _label(mine[flow]) if flow in mine else ""
            ax.text(hi + 0.01 * (hi - lo), y0 + 0.4, label, fontsize=7, va="center",
                    color="#333333" if label == "no loss" else LOSS,
                    fontweight="bold" if crossed else "normal")
        ax.axvline(0, color="red", ls="--", lw=1.2)
        ax.text(0, len(flows) + 0.05, " failed", color="red", fontsize=7, va="bottom")
        if t_restore - t_fail <= hi:
            ax.axvline(t_restore - t_fail, color="grey", ls="--", lw=1.2)
            ax.text(t_restore - t_fail, len(flows) + 0.05, " restored", color="grey", fontsize=7,
                    va="bottom")
        if stage["t_reroute_s"]:
            x = float(stage["t_reroute_s"]) - t_fail
            ax.axvline(x, color="green", ls="-", lw=1.2)
            what = "isolated" if stage["kind"] == "silent" else "rerouted"
            ax.text(x, len(flows) + 0.05, f" {what} after {x * 1000:.0f} ms", color="green",
                    fontsize=7, va="bottom")
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.1, len(flows) + 0.45)
        ax.set_yticks([len(flows) - 1 - i + 0.4 for i in range(len(flows))], flows, fontsize=6)
        worst = max((float(o["loss_window_ms"]) for o in mine.values() if o["crossed"] == "1"),
                    default=0.0)
        dead = sum(o["crossed"] == "1" and o["recovered"] != "1" for o in mine.values())
        verdict = (f"{dead} flows dark until the link was repaired" if dead and stage["kind"] == "none"
                   else f"{dead} flows did not recover" if dead else
                   f"worst loss window {worst:.0f} ms" if worst else "no packet lost")
        shown = "" if t_restore - t_fail <= hi else f"; restored at +{t_restore - t_fail:.1f} s"
        ax.set_title(f"{stage['kind']}: {stage['title']} ({stage['target']}): {verdict}{shown}",
                     fontsize=9, loc="left", pad=14)
        ax.tick_params(axis="x", labelsize=7)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[-1, 0].set_xlabel(f"time since the failure (s); each lane: packets received per "
                           f"{float(params.get('bin_s', 0.01)) * 1000:.0f} ms (dark: crosses what "
                           f"failed); red: silences that lost packets", fontsize=8)
    fig.tight_layout()
    fig.subplots_adjust(right=0.86)
    path = result.path / "timeline.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
