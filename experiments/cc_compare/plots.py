"""Plots of cc-compare, drawn from its CSV files alone."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir

COLOURS = {"none": "#7570b3", "dcqcn": "#d95f02", "hpcc": "#1b9e77"}


def plot(result: ResultDir) -> list[Path]:
    summary = result.read_csv("summary.csv")
    if not summary:
        return []
    patterns = list(dict.fromkeys(r["pattern"] for r in summary))
    out = []

    hist = result.read_csv("queue_hist.csv")
    queues = result.read_csv("queues.csv")
    bottleneck = {(r["pattern"], r["cc"], r["switch"], r["port"]) for r in queues
                  if r["bottleneck"] == "1"}
    fig, axes = plt.subplots(1, len(patterns), figsize=(5.5 * len(patterns), 3.6),
                             squeeze=False)
    for ax, pattern in zip(axes[0], patterns, strict=True):
        for cc in dict.fromkeys(r["cc"] for r in summary if r["pattern"] == pattern):
            counts: dict[int, int] = {}
            for r in hist:
                if (r["pattern"], r["cc"], r["switch"], r["port"]) in bottleneck and \
                        (r["pattern"], r["cc"]) == (pattern, cc):
                    counts[int(r["depth"])] = counts.get(int(r["depth"]), 0) + int(r["packets"])
            total = sum(counts.values())
            if not total:
                continue
            xs, ys, seen = [], [], 0
            for depth in sorted(counts):
                seen += counts[depth]
                xs.append(depth)
                ys.append(seen / total)
            ax.step(xs, ys, where="post", label=cc, color=COLOURS.get(cc), lw=1.6)
        ax.set_title(f"{pattern}: bottleneck queue as packets met it (INT)", fontsize=9)
        ax.set_xlabel("queue depth (packets)")
        ax.set_ylabel("CDF of packets")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=8)
    out.append(save_figure(fig, result.path / "queues.png"))

    panels = (("bottleneck_queue_p50", "queue p50 (packets)"),
              ("bottleneck_queue_p99", "queue p99 (packets)"),
              ("fct_slowdown_p50", "FCT slowdown p50"),
              ("utilisation", "goodput / bottleneck capacity"))
    fig, axes = plt.subplots(len(patterns), len(panels), figsize=(12, 2.8 * len(patterns)),
                             squeeze=False)
    for row, pattern in zip(axes, patterns, strict=True):
        rows = [r for r in summary if r["pattern"] == pattern]
        for ax, (key, title) in zip(row, panels, strict=True):
            ax.bar([r["cc"] for r in rows], [float(r[key] or 0) for r in rows],
                   color=[COLOURS.get(r["cc"], "grey") for r in rows])
            ax.set_title(f"{pattern}: {title}", fontsize=9)
            ax.tick_params(axis="x", labelsize=8)
    out.append(save_figure(fig, result.path / "summary.png"))
    return out
