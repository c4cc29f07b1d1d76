"""Plots of `topology-aware`, drawn from its CSV files alone."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir


def plot(result: ResultDir) -> list[Path]:
    collectives = result.read_csv("collectives.csv")
    steps = result.read_csv("steps.csv")
    out = []
    if any(r["part"] == "aipod" for r in collectives):
        out.append(plot_ring(result, [r for r in collectives if r["part"] == "aipod"]))
    if any(r["part"] == "bigraph" for r in collectives):
        out.append(plot_hd(result, [r for r in collectives if r["part"] == "bigraph"],
                           [r for r in steps if r["part"] == "bigraph"]))
    return out


def plot_ring(result: ResultDir, rows: list[dict]) -> Path:
    orders = [r["order"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    x = range(len(orders))
    left.bar([i - 0.2 for i in x], [int(r["superspine_packets"]) for r in rows], 0.4,
             label="measured (superspine tx counters)")
    left.bar([i + 0.2 for i in x], [int(r["model_superspine_packets"]) for r in rows], 0.4,
             label="fabric model (data packets)")
    left.set_xticks(list(x), orders)
    left.set_ylabel("packets through the superspine")
    left.set_title("AIPod ring allreduce: superspine traffic")
    left.legend(fontsize=8)
    right.bar(orders, [float(r["total_s"]) for r in rows], color="#7570b3")
    right.set_ylabel("completion time (s)")
    right.set_title("completion time")
    path = save_figure(fig, result.path / "aipod_ring.png")
    return path


def plot_hd(result: ResultDir, rows: list[dict], steps: list[dict]) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for row, marker in zip(rows, "os^v", strict=False):
        order = row["order"]
        mine = [s for s in steps if s["order"] == order]
        idx = [int(s["step"]) for s in mine]
        line = left.plot(idx, [int(s["measured_max_link_flows"]) for s in mine], marker + "-",
                         label=f"{order}: measured")[0]
        left.plot(idx, [int(s["model_max_link_flows"]) for s in mine], marker + "--",
                  color=line.get_color(), alpha=0.6, label=f"{order}: fabric model")
    left.axhline(1, color="grey", lw=0.8)
    left.set_xlabel("step (reduce-scatter, then allgather)")
    left.set_ylabel("most flows on one switch-to-switch link")
    left.set_title("BiGraph halving-doubling: link sharing per step")
    left.legend(fontsize=8)
    right.bar([r["order"] for r in rows], [float(r["total_s"]) for r in rows], color="#1b9e77")
    right.set_ylabel("completion time (s)")
    right.set_title("completion time")
    path = save_figure(fig, result.path / "bigraph_hd.png")
    return path
