"""Job-level comparisons of variants (fabrics, rank orders, link rates): rows and plots.

The job experiments measure, per variant, a collective's busbw (several sizes, repetitions)
and a training job's iterations, and compare the variants. `key` names what varies ("fabric",
"order", ...): it is the first column of every table.

    busbw rows      key, size, rep, algorithm, emulated_s, time_us, algbw_gbs, busbw_gbs,
                    complete, wrong, + the experiment's extra columns
    iteration rows  key, iteration, iteration_s, compute_s, exposed_s, communication_s,
                    slowest_nic
    summary         key, size, busbw_gbs (median), iteration_s, exposed_s (medians), + extras
                    aggregated over the repetitions

Times and bandwidths are the modelled fabric's (`jobs.scale.Scale`). `write_tables` writes
the three tables of what is measured so far, after every size and every training, so a run that
stops keeps its rows; `plot` draws whatever part of a summary is there.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir
from jobs.ccl.collectives import busbw_factor
from jobs.ccl.communicator import RunResult
from jobs.scale import Scale
from jobs.train import TrainResult, iteration_rows

BUSBW_COLUMNS = ["size", "rep", "algorithm", "emulated_s", "time_us", "algbw_gbs", "busbw_gbs",
                 "complete", "wrong"]
ITERATION_COLUMNS = ["iteration", "iteration_s", "compute_s", "exposed_s", "communication_s",
                     "slowest_nic"]


def busbw_fields(key: str, extra: Sequence[str] = ()) -> list[str]:
    return [key, *BUSBW_COLUMNS, *extra]


def iteration_fields(key: str) -> list[str]:
    return [key, *ITERATION_COLUMNS]


def summary_fields(key: str, extra: Sequence[str] = ()) -> list[str]:
    return [key, "size", "busbw_gbs", "iteration_s", "exposed_s", *extra]


def busbw_row(key: str, variant: str, collective: str, algorithm: str, rate: Scale, size: int,
              rep: int, res: RunResult, **extra: Any) -> dict[str, Any]:
    """One timed collective of `size` bytes (nccl-tests' S), in modelled units."""
    t = rate.time_s(res.time_s)
    algbw = size / t / 1e9 if t > 0 else 0.0
    return {key: variant, "size": size, "rep": rep, "algorithm": algorithm,
            "emulated_s": round(res.time_s, 6), "time_us": round(t * 1e6, 3),
            "algbw_gbs": round(algbw, 3),
            "busbw_gbs": round(algbw * busbw_factor(collective, len(res.ranks)), 3),
            "complete": int(res.complete), "wrong": res.wrong, **extra}


def iteration_table(key: str, variant: str, result: TrainResult) -> list[dict[str, Any]]:
    return [{key: variant, **{k: row[k] for k in ITERATION_COLUMNS}}
            for row in iteration_rows(result)]


def summarise(key: str, busbw: Sequence[Mapping[str, Any]],
              iterations: Sequence[Mapping[str, Any]],
              extra: Mapping[str, Callable[[list[float]], float]] | None = None
              ) -> list[dict[str, Any]]:
    """Per variant and size: median busbw, the median iteration, and each extra column
    aggregated over the repetitions by its function (sum, max, ...)."""
    extra = extra or {}
    rows = []
    for variant in dict.fromkeys(r[key] for r in busbw):
        its = [r for r in iterations if r[key] == variant]
        for size in dict.fromkeys(r["size"] for r in busbw):
            mine = [r for r in busbw if r[key] == variant and r["size"] == size]
            if not mine:  # a run that stopped before this size
                continue
            rows.append({
                key: variant, "size": size,
                "busbw_gbs": round(statistics.median(float(r["busbw_gbs"]) for r in mine), 3),
                "iteration_s": round(statistics.median(float(r["iteration_s"]) for r in its), 4)
                if its else "",
                "exposed_s": round(statistics.median(float(r["exposed_s"]) for r in its), 4)
                if its else "",
                **{x: how([float(r[x]) for r in mine]) for x, how in extra.items()}})
    return rows


def write_tables(out: ResultDir, key: str, busbw: Sequence[Mapping[str, Any]],
                 iterations: Sequence[Mapping[str, Any]],
                 extra: Mapping[str, Callable[[list[float]], float]]) -> None:
    """busbw.csv, iterations.csv and summary.csv (`extra`: as `summarise`) of the rows measured
    so far, each table replaced whole."""
    out.write_csv("busbw.csv", busbw, busbw_fields(key, list(extra)))
    out.write_csv("iterations.csv", iterations, iteration_fields(key))
    out.write_csv("summary.csv", summarise(key, busbw, iterations, extra),
                  summary_fields(key, list(extra)))


def plot(result: ResultDir, key: str, title: str,
         extra: tuple[str, str] | None = None) -> list[Path]:
    """`busbw.png` (median busbw per size and variant; with `extra` (column, axis label) a
    second panel of it) and `iteration.png` (compute + exposed communication per variant that
    trained), from the run's summary.csv. A run that stopped early draws the sizes and variants
    it measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = result.read_csv("summary.csv")
    variants = list(dict.fromkeys(r[key] for r in summary))
    sizes = list(dict.fromkeys(int(r["size"]) for r in summary))
    panels = 2 if extra else 1
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4), squeeze=False)
    width = 0.8 / max(1, len(variants))
    for i, variant in enumerate(variants):
        mine = {int(r["size"]): r for r in summary if r[key] == variant}
        xs = [k + (i - (len(variants) - 1) / 2) * width for k, s in enumerate(sizes) if s in mine]
        measured = [mine[s] for s in sizes if s in mine]
        axes[0][0].bar(xs, [float(r["busbw_gbs"]) for r in measured], width, label=variant)
        if extra:
            axes[0][1].bar(xs, [float(r[extra[0]]) for r in measured], width, label=variant)
    for ax in axes[0]:
        ax.set_xticks(range(len(sizes)), [f"{s // 1024} KiB" for s in sizes])
        ax.set_xlabel("collective size (per rank)")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("busbw (GB/s, modelled)")
    axes[0][0].set_title(f"{title}: median busbw", fontsize=10)
    if extra:
        axes[0][1].set_ylabel(extra[1])
    first = save_figure(fig, result.path / "busbw.png")
    one = {r[key]: r for r in summary}
    trained = [v for v in variants if one[v]["iteration_s"] != ""]
    if not trained:  # stopped before the first training
        return [first]

    fig, ax = plt.subplots(figsize=(5, 4))
    total = [float(one[v]["iteration_s"]) for v in trained]
    exposed = [float(one[v]["exposed_s"]) for v in trained]
    compute = [t - e for t, e in zip(total, exposed, strict=True)]
    ax.bar(trained, compute, label="compute", color="#999999")
    ax.bar(trained, exposed, bottom=compute, label="exposed communication", color="#d95f02")
    ax.set_ylabel("iteration time (s, modelled)")
    ax.set_title("training iteration (median)", fontsize=10)
    ax.legend(fontsize=8)
    second = save_figure(fig, result.path / "iteration.png")
    return [first, second]
