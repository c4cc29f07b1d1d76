"""Plots of the pfc-deadlock experiment, drawn from its CSV files alone."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir


def plot(result: ResultDir) -> list[Path]:
    out = []
    if (result.path / "timeseries.csv").exists():
        out.append(_queues(result))
    if (result.path / "sweep.csv").exists():
        out.append(_sweep(result))
    return out


def _queues(result: ResultDir) -> Path:
    """Depth of every ring queue over time, one panel per setting; watchdog events marked."""
    by: dict[str, dict[str, list[tuple[float, int]]]] = defaultdict(lambda: defaultdict(list))
    for row in result.read_csv("timeseries.csv"):
        by[row["setting"]][f"{row['switch']}:{row['port']}"].append(
            (float(row["t_s"]), int(row["depth"])))
    events: dict[str, list[tuple[float, str]]] = defaultdict(list)
    if (result.path / "events.csv").exists():
        for e in result.read_csv("events.csv"):
            events[e["setting"]].append((float(e["t_s"]), e["kind"]))
    settings = list(by)
    fig, axes = plt.subplots(len(settings), 1, figsize=(8, 2.4 * len(settings) + 0.6),
                             sharex=True, squeeze=False)
    fig.suptitle("Ring queue depth (packets); watchdog: stuck (red), restored (green)")
    for ax, setting in zip([a[0] for a in axes], settings, strict=True):
        for queue, points in sorted(by[setting].items()):
            ax.plot([t for t, _ in points], [d for _, d in points], label=queue)
        for t, kind in events.get(setting, []):
            ax.axvline(t, color="red" if kind == "stuck" else "green", lw=0.6, alpha=0.6)
        ax.set_title(setting, fontsize=9)
        ax.set_ylabel("depth")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1][0].set_xlabel("s from the senders' start")
    path = save_figure(fig, result.path / "queues.png", dpi=110)
    return path


def _sweep(result: ResultDir) -> Path:
    rows = result.read_csv("sweep.csv")
    det = [int(r["detection_ms"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(det, [int(r["false_stuck"]) for r in rows], "o-", label="queues declared stuck")
    ax.plot(det, [int(r["watchdog_dropped"]) for r in rows], "s--", label="packets dropped")
    ax.set_xscale("log")
    ax.set_xlabel("detection time (ms)")
    ax.set_title("Watchdog false positives in a healthy 3:1 incast")
    ax.legend(fontsize=8)
    path = save_figure(fig, result.path / "false_positives.png", dpi=110)
    return path
