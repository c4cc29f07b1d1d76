"""What a trial shows, from the ring queues' samples and the watchdog's events alone.

Samples are TelemetrySampler rows (t_s from the senders' start); "sent" is a port's data
transmit count (tx_packets - pfc_tx: PFC frames leave on the same port). Events are the
switches' watchdog events with t in the same time base (see `events_to_t`).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from typing import Any

Queue = tuple[str, int]  # (switch, port)


def _series(rows: list[dict], queue: Queue) -> list[dict]:
    return [r for r in rows if (r["switch"], r["port"]) == queue]


def _sent(row: dict) -> int:
    return row["tx_packets"] - row["pfc_tx"]


def hold_window(rows: list[dict], queues: Iterable[Queue], lo: float, hi: float
                ) -> dict[str, Any]:
    """Over [lo, hi] (after the senders stopped): per ring queue the data it sent, whether it
    was paused and non-empty in every sample; and whether that holds for all (deadlocked)."""
    per: dict[str, Any] = {}
    stuck_all = True
    sent_total = 0
    depths = []
    for q in queues:
        s = [r for r in _series(rows, q) if lo <= r["t_s"] <= hi]
        if len(s) < 2:
            raise ValueError(f"fewer than two samples of {q[0]}:{q[1]} in [{lo}, {hi}] s")
        sent = _sent(s[-1]) - _sent(s[0])
        frozen = all(r["paused"] and r["depth"] > 0 for r in s)
        stuck_all = stuck_all and frozen and sent == 0
        sent_total += sent
        depths.append(s[-1]["depth"])
        per[f"{q[0]}:{q[1]}"] = {"sent": sent, "frozen": frozen, "depth": s[-1]["depth"]}
    return {"deadlocked": stuck_all, "ring_sent": sent_total, "ring_depths": depths,
            "ring_throughput_pps": round(sent_total / (hi - lo), 1), "queues": per}


def last_move(rows: list[dict], queues: Iterable[Queue], before: float) -> float | None:
    """The last sample time before `before` at which any ring queue had sent since the
    previous sample: the cycle froze between it and the next sample."""
    latest = None
    for q in queues:
        s = [r for r in _series(rows, q) if r["t_s"] <= before]
        for prev, row in pairwise(s):
            if _sent(row) != _sent(prev):
                latest = row["t_s"] if latest is None else max(latest, row["t_s"])
    return latest


def drained_at(rows: list[dict], queues: Iterable[Queue], after: float) -> float | None:
    """The first sample time after `after` at which every ring queue is empty and unpaused."""
    # the samples of one round share nearly one time: rounds by the first queue's times
    qs = list(queues)
    first = _series(rows, qs[0])
    for row in first:
        if row["t_s"] <= after:
            continue
        t = row["t_s"]
        rnd = [min(_series(rows, q), key=lambda r: abs(r["t_s"] - t)) for q in qs]
        if all(r["depth"] == 0 and not r["paused"] for r in rnd):
            return row["t_s"]
    return None


def events_to_t(events: list[dict], t_start_epoch: float, epoch_minus_mono: float) -> list[dict]:
    """Watchdog events (monotonic t) with `t_s` relative to the senders' start (epoch)."""
    return [{**e, "t_s": round(e["t"] + epoch_minus_mono - t_start_epoch, 4)} for e in events]
