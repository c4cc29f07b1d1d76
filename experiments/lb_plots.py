"""Plots of `lb-compare`, drawn from its CSV files alone."""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.ballsbins import expected_imbalance
from experiments.results import ResultDir


def plot(result: ResultDir) -> list[Path]:
    runs = result.read_csv("runs.csv")
    return [plot_imbalance(result, runs), plot_completion_cdf(result, runs)]


def plot_imbalance(result: ResultDir, runs: list[dict]) -> Path:
    fabrics = list(dict.fromkeys(r["fabric"] for r in runs))
    fig, axes = plt.subplots(1, len(fabrics), figsize=(6.5 * len(fabrics), 4.5), squeeze=False)
    for ax, fab in zip(axes[0], fabrics, strict=True):
        rows = [r for r in runs if r["fabric"] == fab]
        for lab in dict.fromkeys(r["label"] for r in rows):
            flows = sorted({int(r["flows"]) for r in rows if r["label"] == lab})
            samples = [[float(r["imbalance"]) for r in rows
                        if r["label"] == lab and int(r["flows"]) == n] for n in flows]
            means = [statistics.mean(s) for s in samples]
            errors = [statistics.stdev(s) / len(s) ** 0.5 if len(s) > 1 else 0.0
                      for s in samples]
            ax.errorbar(flows, means, yerr=errors, fmt="o-", capsize=3, label=lab)
        flows = sorted({int(r["flows"]) for r in rows})
        links = int(rows[0]["uplinks"])
        ax.plot(flows, [expected_imbalance(n, links) for n in flows], "k--",
                label=f"balls into bins ({links} uplinks): ECMP expectation")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("RoCEv2 flows (queue pairs) between two leaves")
        ax.set_ylabel("busiest uplink / mean uplink bytes")
        ax.set_title(f"{fab}: uplink imbalance (mean ± s.e. over seeds)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = result.path / "imbalance.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_completion_cdf(result: ResultDir, runs: list[dict]) -> Path:
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for fab in dict.fromkeys(r["fabric"] for r in runs):
        rows = [r for r in runs if r["fabric"] == fab]
        for lab in dict.fromkeys(r["label"] for r in rows):
            values = sorted(float(r["slowdown"]) for r in rows if r["label"] == lab)
            ys = [(i + 1) / len(values) for i in range(len(values))]
            ax.step(values, ys, where="post", label=f"{fab}: {lab}")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("job completion time / ideal (slowest flow; every flow at its NIC's share)")
    ax.set_ylabel("fraction of runs (all N and seeds)")
    ax.set_title("Collective-step completion time per load-balancing mode")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = result.path / "completion_cdf.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
