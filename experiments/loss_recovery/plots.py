"""Plots of `loss-recovery`, drawn from its CSV files alone."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir

COLOURS = {"go-back-n": "#d95f02", "selective": "#1b9e77"}


def plot(result: ResultDir) -> list[Path]:
    trials = result.read_csv("trials.csv")  # a run that stopped: the trials it ran
    if not trials:
        return []
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for transport, colour in COLOURS.items():
        mine = [r for r in trials if r["transport"] == transport]
        if not mine:
            continue
        ax.scatter([float(r["loss"]) * 100 for r in mine], [float(r["of_bound"]) for r in mine],
                   color=colour, alpha=0.35, s=14)
        losses = sorted({float(r["loss"]) for r in mine})
        medians = []
        for loss in losses:
            values = sorted(float(r["of_bound"]) for r in mine if float(r["loss"]) == loss)
            medians.append(values[len(values) // 2])
        ax.plot([x * 100 for x in losses], medians, marker="o", color=colour, label=transport)
    ax.set_xscale("log")
    ax.set_xlabel("packets lost on the link (%)")
    ax.set_ylabel("goodput / bound")
    ax.set_ylim(0, 1.05)
    ax.set_title("one QP over a lossy link (median and runs)")
    ax.legend(fontsize=8)
    return [save_figure(fig, result.path / "goodput.png")]
