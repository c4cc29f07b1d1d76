"""Plots of `segment`, drawn from its CSV files alone (each part's plot when it ran)."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir


def plot(result: ResultDir) -> list[Path]:
    """Each part's plot once it has rows (a run that stopped: the parts it reached)."""
    out = []
    paths = _rows(result, "paths.csv")
    if paths:
        out.append(plot_paths(result, paths))
    polarisation = _rows(result, "polarisation.csv")
    if polarisation:
        out.append(plot_polarisation(result, polarisation))
    timeline = _rows(result, "tor_timeline.csv")
    if timeline:
        out.append(plot_tor(result, timeline, result.read_csv("tor_failure.csv")))
    return out


def _rows(result: ResultDir, name: str) -> list[dict]:
    """The rows of CSV file `name`; none when the part did not run."""
    return result.read_csv(name) if (result.path / name).exists() else []


def _save(fig, result: ResultDir, name: str) -> Path:
    path = save_figure(fig, result.path / name)
    return path


def plot_paths(result: ResultDir, rows: list[dict]) -> Path:
    classes = list(dict.fromkeys(r["class"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    hops = [statistics.mean(int(r["switch_hops"]) for r in rows if r["class"] == c)
            for c in classes]
    model = [statistics.mean(int(r["model_paths"]) for r in rows if r["class"] == c)
             for c in classes]
    xs = range(len(classes))
    axes[0].bar([x - 0.2 for x in xs], hops, 0.4, label="switches crossed (measured)")
    axes[0].bar([x + 0.2 for x in xs], model, 0.4, label="equal-cost paths (model)")
    axes[0].set_xticks(list(xs), classes)
    axes[0].set_title("Same-rail traffic: one ToR, one path, no hashing")
    axes[0].legend(fontsize=8)
    used = Counter((r["class"], r["plane"], r["aggs"] or "(none)") for r in rows)
    labels = sorted({(p, a) for _, p, a in used})
    bottom = [0] * len(classes)
    for plane, agg in labels:
        counts = [used.get((c, plane, agg), 0) for c in classes]
        axes[1].bar(list(xs), counts, 0.6, bottom=bottom, label=f"plane {plane}, via {agg}")
        bottom = [b + n for b, n in zip(bottom, counts, strict=True)]
    axes[1].set_xticks(list(xs), classes)
    axes[1].set_ylabel("flows")
    axes[1].set_title("Where traced flows went: planes (NIC port) and aggregation switches")
    axes[1].legend(fontsize=7)
    return _save(fig, result, "paths.png")


def plot_polarisation(result: ResultDir, rows: list[dict]) -> Path:
    designs = list(dict.fromkeys(r["design"] for r in rows))
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    share = [[int(r["paths_used"]) / int(r["paths_available"]) for r in rows
              if r["design"] == d] for d in designs]
    ax.bar(range(len(designs)), [statistics.mean(s) for s in share],
           yerr=[statistics.stdev(s) if len(s) > 1 else 0 for s in share], capsize=4)
    ax.set_xticks(range(len(designs)), designs, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("end-to-end paths used / available")
    ax.set_title(f"{rows[0]['flows']} flows through ecmp.p4: hash polarisation needs two stages")
    return _save(fig, result, "polarisation.png")


def plot_tor(result: ResultDir, timeline: list[dict], flows: list[dict]) -> Path:
    fabrics = list(dict.fromkeys(r["fabric"] for r in timeline))
    fig, axes = plt.subplots(1, len(fabrics), figsize=(6.5 * len(fabrics), 4.5), squeeze=False,
                             sharey=True)
    crossed = {(f["fabric"], f["flow"]) for f in flows if f["crossed"] == "1"}
    for ax, fab in zip(axes[0], fabrics, strict=True):
        totals: dict[str, dict[float, float]] = {"through the failed ToR": {}, "others": {}}
        for r in timeline:
            if r["fabric"] != fab:
                continue
            key = "through the failed ToR" if (fab, r["flow"]) in crossed else "others"
            t = float(r["t_s"])
            totals[key][t] = totals[key].get(t, 0.0) + float(r["goodput_bps"]) / 1e6
        for key, series in totals.items():
            ts = sorted(series)
            ax.plot(ts, [series[t] for t in ts], label=f"flows {key}")
        ax.axvline(0, color="red", lw=0.8, label="ToR off")
        ax.set_xlabel("s from the ToR failure")
        ax.set_title(f"{fab}: goodput around a ToR failure")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("goodput (Mb/s, 100 ms bins)")
    return _save(fig, result, "tor_failure.png")
