"""Plots of the incast experiment, drawn from its CSV files alone."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework.results import ResultDir
from experiments.incast.trial import FRAME_BITS

QUEUE_LABELS = ("congested port", "victim port", "spine downlink", "leaf uplink")


def _series(result: ResultDir) -> tuple[list[str], dict[str, dict[tuple[str, int], list[dict]]]]:
    rows = result.read_csv("timeseries.csv")
    settings: list[str] = []
    by: dict[str, dict[tuple[str, int], list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["setting"] not in settings:
            settings.append(row["setting"])
        by[row["setting"]][(row["switch"], int(row["port"]))].append(row)
    return settings, by


def _labels(queues: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """Queues appear in the order the trial watches them (congested, victim, spine, leaf)."""
    return {q: f"{QUEUE_LABELS[i] if i < len(QUEUE_LABELS) else ''} ({q[0]}:{q[1]})"
            for i, q in enumerate(queues)}


def _grid(n: int, title: str):
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.4 * n + 0.6), sharex=True, squeeze=False)
    fig.suptitle(title)
    return fig, [row[0] for row in axes]


def plot(result: ResultDir) -> list[Path]:
    settings, by = _series(result)
    if not settings:
        return []
    out = []

    fig, axes = _grid(len(settings), "Queue depth (deepest enqueue per sample, packets)")
    for ax, setting in zip(axes, settings, strict=True):
        labels = _labels(list(by[setting]))
        for queue, rows in by[setting].items():
            ax.plot([float(r["t_s"]) for r in rows], [int(r["depth_max"]) for r in rows],
                    label=labels[queue], lw=1.2)
        ax.set_title(setting, fontsize=9, loc="left")
        ax.set_ylabel("packets")
        ax.axvline(0, color="grey", lw=0.6, ls=":")
    axes[0].legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time from the incast start (s)")
    fig.tight_layout()
    out.append(result.path / "queues.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)

    fig, axes = _grid(len(settings), "Throughput out of each port (Mb/s, 1082-byte frames)")
    for ax, setting in zip(axes, settings, strict=True):
        labels = _labels(list(by[setting]))
        for queue, rows in list(by[setting].items())[:2]:  # congested and victim ports
            ts = [float(r["t_s"]) for r in rows]
            tx = [int(r["tx_packets"]) for r in rows]
            rate = [(tx[i] - tx[i - 1]) * FRAME_BITS / (ts[i] - ts[i - 1]) / 1e6
                    if ts[i] > ts[i - 1] else 0.0 for i in range(1, len(ts))]
            ax.plot(ts[1:], rate, label=labels[queue], lw=1.2)
        ax.set_title(setting, fontsize=9, loc="left")
        ax.set_ylabel("Mb/s")
        ax.axvline(0, color="grey", lw=0.6, ls=":")
    axes[0].legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time from the incast start (s)")
    fig.tight_layout()
    out.append(result.path / "throughput.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)

    summary = result.read_csv("summary.csv")
    fig, axes = plt.subplots(1, 4, figsize=(12, 3.2))
    names = [r["setting"] for r in summary]
    for ax, (key, title) in zip(axes, (("drops_congested", "drops at the congested port"),
                                       ("completion_s", "incast completion (s)"),
                                       ("peak_queue_upstream", "peak spine queue (packets)"),
                                       ("victim_mbps_during", "victim Mb/s during incast")),
                                strict=True):
        ax.bar(names, [float(r[key] or 0) for r in summary],
               color=["#7570b3", "#1b9e77", "#d95f02", "#e7298a"][:len(names)])
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    out.append(result.path / "summary.png")
    fig.savefig(out[-1], dpi=110)
    plt.close(fig)
    return out
