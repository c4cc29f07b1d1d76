"""Plots of `straggler`, drawn from its CSV files alone."""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir


def plot(result: ResultDir) -> list[Path]:
    iterations = result.read_csv("iterations.csv")  # a run that stopped: the phases it ran
    if not iterations:
        return []
    ranks = result.read_csv("ranks.csv")
    verdicts = {r["phase"]: r for r in result.read_csv("verdict.csv")}
    phases = list(dict.fromkeys(r["phase"] for r in iterations))

    fig, ax = plt.subplots(figsize=(5, 4))
    compute = [statistics.median(float(r["compute_s"]) for r in iterations if r["phase"] == p)
               for p in phases]
    exposed = [statistics.median(float(r["exposed_s"]) for r in iterations if r["phase"] == p)
               for p in phases]
    ax.bar(phases, compute, label="compute", color="#999999")
    ax.bar(phases, exposed, bottom=compute, label="exposed communication", color="#d95f02")
    ax.set_ylabel("iteration time (s, modelled)")
    ax.set_title("the whole job's iteration (median)")
    ax.legend(fontsize=8)
    first = save_figure(fig, result.path / "iterations.png")

    fig, ax = plt.subplots(figsize=(8, 4))
    nics = list(dict.fromkeys(r["nic"] for r in ranks))
    width = 0.8 / max(1, len(phases))
    for i, phase in enumerate(phases):
        mine = {r["nic"]: float(r["own_iteration_s"]) for r in ranks if r["phase"] == phase}
        xs = [k + (i - (len(phases) - 1) / 2) * width for k in range(len(nics))]
        ax.bar(xs, [mine.get(n, 0.0) for n in nics], width, label=phase)
    named = verdicts.get("degraded", {}).get("named_link", "")
    ax.set_xticks(range(len(nics)), nics, rotation=30, fontsize=8)
    ax.set_ylabel("own iteration (s, modelled)")
    ax.set_title(f"per rank; named link: {named or 'none'}", fontsize=10)
    ax.legend(fontsize=8)
    second = save_figure(fig, result.path / "ranks.png")
    return [first, second]
