"""What a layer-by-layer training run (`jobs.train_layers`) measured, as people read it: a text
report, CSV tables, a Chrome trace and a per-rank timeline plot.

    spans.csv       every task on every rank in every iteration (modelled seconds)
    iterations.csv  per iteration and rank: its time, compute and idle time by communicator
    groups.csv      per communicator: collectives, bytes, median time, busbw, exposed time
    trace.json      the spans as a Chrome trace (chrome://tracing, ui.perfetto.dev)
    timeline.png    one lane per rank: compute and each communicator's collectives
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobs.trace import write_trace
from jobs.train_layers import LayeredResult

SPAN_FIELDS = ["iteration", "rank", "task", "kind", "communicator", "bytes", "start_s", "end_s"]
ITERATION_FIELDS = ["iteration", "rank", "time_s", "compute_s", "exposed_s", "idle_tp_s",
                    "idle_dp_s", "idle_ep_s", "idle_dp_ep_s", "idle_pp_s", "idle_start_s"]
GROUP_FIELDS = ["communicator", "collectives", "bytes", "median_s", "busbw_gbs", "exposed_s"]
COLOURS = {"compute": "#4c72b0", "tp": "#dd8452", "dp": "#55a868", "ep": "#c44e52",
           "dp_ep": "#8172b3", "pp": "#937860"}


def span_rows(result: LayeredResult) -> list[dict[str, Any]]:
    bf = result.scale.bytes_factor
    return [{"iteration": s.iteration, "rank": s.rank, "task": s.task.name, "kind": s.task.kind,
             "communicator": s.task.comm or "", "bytes": round(s.task.nbytes * bf),
             "start_s": round(s.start_s, 9), "end_s": round(s.end_s, 9)}
            for s in sorted(result.spans, key=lambda s: (s.iteration, s.rank, s.start_s))]


def iteration_rows(result: LayeredResult) -> list[dict[str, Any]]:
    rows = []
    for it in result.iterations:
        for r in it.ranks:
            rows.append({"iteration": it.index, "rank": r.rank, "time_s": round(r.time_s, 6),
                         "compute_s": round(r.compute_s, 6), "exposed_s": round(r.exposed_s, 6),
                         **{f"idle_{k}_s": round(r.idle_by.get(k, 0.0), 6)
                            for k in ("tp", "dp", "ep", "dp_ep", "pp", "start")}})
    return rows


def group_rows(result: LayeredResult) -> list[dict[str, Any]]:
    return [{"communicator": g.comm, "collectives": g.collectives, "bytes": g.bytes,
             "median_s": round(g.median_s, 6), "busbw_gbs": round(g.busbw_gbs, 3),
             "exposed_s": round(g.exposed_s, 6)} for g in result.groups.values()]


def report(result: LayeredResult, title: str) -> str:
    w = result.workload
    lines = [f"# {title}: TP {w.tp} x DP {w.dp} x PP {w.pp} (EP {w.ep}), {w.ga} microbatches, "
             f"{len(w.layers)} layers; times in the modelled job's seconds", *result.notes, "",
             f"{'iter':>4} {'iteration s':>12} {'compute s':>10} {'exposed s':>10} "
             f"{'slowest rank':>12}"]
    for it in result.iterations:
        lines.append(f"{it.index:>4} {it.iteration_s:>12.4f} {it.compute_s:>10.4f} "
                     f"{it.exposed_s:>10.4f} {it.slowest.rank:>12}")
    lines += ["", f"{'communicator':<12} {'per iter':>8} {'bytes/rank':>14} {'median ms':>10} "
                  f"{'busbw GB/s':>10} {'exposed s':>10}"]
    for g in result.groups.values():
        lines.append(f"{g.comm:<12} {g.collectives:>8} {g.bytes:>14} {g.median_s * 1e3:>10.2f} "
                     f"{g.busbw_gbs:>10.2f} {g.exposed_s:>10.4f}")
    lines.append("")
    if result.slow_gpus:
        lines += [f"slow GPU: rank {r}, its compute {f:.2f} x the median rank's"
                  for r, f in result.slow_gpus]
    else:
        lines.append("slow GPU: none (every rank's compute within 20 % of the median's)")
    if result.link is not None:
        lines.append(f"slow link: {result.link.describe()}")
    if not result.complete:
        lines += ["", "NOT COMPLETE: " + "; ".join(result.errors)]
    return "\n".join(lines)


def plot_timeline(result: LayeredResult, path: Path, iteration: int | None = None) -> Path:
    """One lane per rank for one iteration (the last by default)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    it = iteration if iteration is not None else max((s.iteration for s in result.spans),
                                                     default=0)
    spans = [s for s in result.spans if s.iteration == it and s.duration_s > 0]
    ranks = sorted({s.rank for s in spans})
    t0 = min((s.start_s for s in spans), default=0.0)
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(ranks) + 1.4))
    for s in spans:
        comm = s.task.comm or "compute"
        key = "pp" if comm.startswith("pp ") else comm
        lane = ranks.index(s.rank)
        height = 0.8 if key == "compute" else 0.35
        offset = 0.0 if key == "compute" else 0.4
        ax.broken_barh([(s.start_s - t0, s.duration_s)], (lane - 0.4 + offset, height),
                       color=COLOURS.get(key, "#777777"), linewidth=0)
    ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("modelled seconds from the iteration's start")
    ax.set_title(f"iteration {it}: compute (full lanes) and collectives (upper half)")
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], ncol=6,
              loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_files(result: LayeredResult, out: Any) -> list[str]:
    """The tables, trace and plot into result directory `out` (a ResultDir)."""
    out.write_csv("spans.csv", span_rows(result), SPAN_FIELDS)
    out.write_csv("iterations.csv", iteration_rows(result), ITERATION_FIELDS)
    out.write_csv("groups.csv", group_rows(result), GROUP_FIELDS)
    write_trace(out.path / "trace.json", result.spans)
    plot_timeline(result, out.path / "timeline.png")
    return ["spans.csv", "iterations.csv", "groups.csv", "trace.json", "timeline.png"]
