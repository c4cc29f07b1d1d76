"""Plots of `lb-compare`, drawn from its CSV files alone."""

from __future__ import annotations

import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.ballsbins import expected_imbalance
from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir

MARKERS = "osD^vP*X"
DASHES = ["-", "--", "-.", ":"]


def plot(result: ResultDir) -> list[Path]:
    """The plots of the runs measured (a run that stopped: of the runs it made)."""
    every = result.read_csv("runs.csv")
    runs = [r for r in every if r.get("scenario", "even") == "even"]
    out = [plot_imbalance(result, runs), plot_completion_cdf(result, runs)] if runs else []
    if any(r.get("scenario", "even") != "even" for r in every):
        out.append(plot_scenarios(result, every))
    if any(r.get("tags") == "0" for r in runs):
        out.append(plot_tags(result, runs))
    return out


def _bars(ax, groups: list[str], labels: list[str], value) -> None:
    """Grouped bars: one group per entry of `groups`, one bar per label (mean, s.e.)."""
    width = 0.8 / max(1, len(labels))
    for i, lab in enumerate(labels):
        means, errors = [], []
        for group in groups:
            samples = value(group, lab)
            means.append(statistics.mean(samples) if samples else 0.0)
            errors.append(statistics.stdev(samples) / len(samples) ** 0.5
                          if len(samples) > 1 else 0.0)
        xs = [g + (i - (len(labels) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, means, width, yerr=errors, capsize=3, label=lab)
    ax.set_xticks(range(len(groups)), groups)


def plot_scenarios(result: ResultDir, runs: list[dict]) -> Path:
    """Job slowdown per scenario and mode, for the modes run in every scenario."""
    scenarios = list(dict.fromkeys(r["scenario"] for r in runs))
    asym = [r for r in runs if r["scenario"] != "even"]
    labels = list(dict.fromkeys(r["label"] for r in asym))
    flows = {r["flows"] for r in asym}
    rows = [r for r in runs if r["label"] in labels and r["flows"] in flows]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))

    def metric(field: str):
        return lambda scen, lab: [float(r.get(field) or 0) for r in rows
                                  if r["scenario"] == scen and r["label"] == lab]
    _bars(axes[0], scenarios, labels, metric("slowdown"))
    axes[0].axhline(1.0, color="grey", lw=0.8)
    axes[0].set_ylabel("job completion time / ideal (even uplinks)")
    axes[0].set_title(f"Collective step, {'/'.join(sorted(flows))} flows: slowdown")
    _bars(axes[1], scenarios, labels, metric("first_uplink_share"))
    axes[1].axhline(1 / int(rows[0]["uplinks"]), color="grey", lw=0.8, label="an even share")
    axes[1].set_ylabel("share of the uplink bytes on the first uplink")
    axes[1].set_title("The uplink slowed in the asymmetric scenarios: how much it carried")
    for ax in axes:
        ax.legend(fontsize=8)
    path = save_figure(fig, result.path / "scenarios.png")
    return path


def plot_tags(result: ResultDir, runs: list[dict]) -> Path:
    """Per-packet modes with and without reorder tags: goodput and packets resent."""
    labels = list(dict.fromkeys(r["label"] for r in runs if r["mode"] in ("dlb", "qdlb")))
    flows = sorted({int(r["flows"]) for r in runs}, key=int)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    groups = [str(n) for n in flows]

    def metric(field: str, scale: float = 1.0):
        return lambda n, lab: [float(r[field]) / scale for r in runs
                               if r["flows"] == n and r["label"] == lab]
    _bars(axes[0], groups, labels, metric("goodput_bps", 1e6))
    axes[0].set_ylabel("goodput of the step (Mb/s, all flows)")
    axes[0].set_title("Spraying with and without reorder tags: goodput")
    _bars(axes[1], groups, labels, metric("retransmitted_packets"))
    axes[1].set_ylabel("packets resent (go-back-N)")
    axes[1].set_title("Untagged reordering reads as loss: NAKs and resends")
    for ax in axes:
        ax.set_xlabel("RoCEv2 flows between two leaves")
        ax.legend(fontsize=8)
    path = save_figure(fig, result.path / "tags.png")
    return path


def plot_imbalance(result: ResultDir, runs: list[dict]) -> Path:
    fabrics = list(dict.fromkeys(r["fabric"] for r in runs))
    fig, axes = plt.subplots(1, len(fabrics), figsize=(6.5 * len(fabrics), 4.5), squeeze=False)
    for ax, fab in zip(axes[0], fabrics, strict=True):
        rows = [r for r in runs if r["fabric"] == fab]
        labels = list(dict.fromkeys(r["label"] for r in rows))
        for index, lab in enumerate(labels):
            flows = sorted({int(r["flows"]) for r in rows if r["label"] == lab})
            samples = [[float(r["imbalance"]) for r in rows
                        if r["label"] == lab and int(r["flows"]) == n] for n in flows]
            means = [statistics.mean(s) for s in samples]
            errors = [statistics.stdev(s) / len(s) ** 0.5 if len(s) > 1 else 0.0
                      for s in samples]
            # modes with equal values would hide each other: each its own marker and dashes,
            # and a small sideways offset (the x axis is logarithmic: a factor)
            shift = 2 ** (0.04 * (index - (len(labels) - 1) / 2))
            ax.errorbar([n * shift for n in flows], means, yerr=errors,
                        marker=MARKERS[index % len(MARKERS)],
                        linestyle=DASHES[index % len(DASHES)], capsize=3, label=lab)
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
    path = save_figure(fig, result.path / "imbalance.png")
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
    slowdowns = [float(r["slowdown"]) for r in runs if float(r["slowdown"]) > 0]
    if slowdowns and max(slowdowns) > 5 * min(slowdowns):  # untagged spraying: tens of times
        ax.set_xscale("log")
    ax.set_xlabel("job completion time / ideal (slowest flow; every flow at its NIC's share)")
    ax.set_ylabel("fraction of runs (all N and seeds)")
    ax.set_title("Collective-step completion time per load-balancing mode")
    ax.legend(fontsize=8)
    path = save_figure(fig, result.path / "completion_cdf.png")
    return path
