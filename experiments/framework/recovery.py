"""What a link failure cost one flow, computed from the receiver's records alone.

- **loss window**: the silence the failure caused, from the last packet before it to the first
  after it (a flow the failure did not touch has none: 0);
- **packets lost**: PSNs never received, and how many of them were lost when the link came back
  (a restore can cost packets too: the data plane uses the link before the routes over it are
  back);
- **time to full throughput**: from the failure until the flow's throughput (a rolling mean over
  a few bins) is back at `fraction` of its mean over the second before the failure;
- **never recovered**: a flow that has delivered nothing for the last `quiet_s` of the run. A
  silence with no packet after it leaves no gap in the receiver's records, so without this a
  dead flow would read as untouched; its loss window runs to the end of the run (a lower bound).

Arrivals are the kernel's receive stamps (traffic/paced.py), so a receiver the busy machine kept
off the CPU for a while neither opens a silence nor lengthens one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass
class FlowRecovery:
    """How one flow came through a failure: its loss window, losses and recovery time."""

    flow: str
    loss_window_s: float
    lost: int
    recovery_s: float | None  # None: not back to full throughput before the run ended
    affected: bool  # lost packets or went silent around the failure
    crossed: bool = False  # its path went through the failed link or switch
    lost_at_restore: int = 0  # of `lost`, those in silences that began when it was restored
    recovered: bool = True  # False: silent at the end of the run (loss window: a lower bound)


def loss_window(gaps: Sequence[Sequence[float]], t_fail: float, horizon_s: float = 5.0,
                slack_s: float = 0.05, span: bool = False) -> float:
    """How long the failure at `t_fail` kept the flow from delivering, from its silences.

    `gaps` are (last arrival before, first arrival after, PSNs skipped there and never
    received) for every silence longer than the receiver's gap floor; only silences that lost
    packets count (a reordered packet that arrived late is not lost), and only those beginning
    between `slack_s` before `t_fail` and `horizon_s` after it. The window is the
    longest such silence (a link that went dark), or with `span` the time from the first to the
    end of the last one (a link that drops some packets until it is isolated).
    """
    lossy = [(g[0], g[1]) for g in gaps
             if len(g) > 2 and g[2] > 0 and t_fail - slack_s <= g[0] <= t_fail + horizon_s]
    if not lossy:
        return 0.0
    if span:
        return max(end for _, end in lossy) - min(start for start, _ in lossy)
    return max(end - start for start, end in lossy)


def rolling_mean(values: Sequence[float], width: int) -> list[float]:
    """Mean of each value and the `width - 1` before it (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= width:
            total -= values[i - width]
        out.append(total / min(i + 1, width))
    return out


def recovery_time(bins: Mapping[int, float], bin_s: float, t_fail_s: float, *,
                  fraction: float = 0.9, baseline_s: float = 1.0, smooth: int = 5,
                  hold: int = 10) -> float | None:
    """Seconds from `t_fail_s` (relative to bin 0) until throughput is back for good.

    Back = the rolling mean over `smooth` bins is at least `fraction` of the baseline (the mean
    over `baseline_s` before the failure) and stays there for `hold` bins. 0 when it never
    dropped; None when it had not recovered by the last bin, or there is no baseline.
    """
    if not bins:
        return None
    fail = int(t_fail_s / bin_s)
    first = fail - max(1, int(baseline_s / bin_s))
    before = [bins.get(i, 0) for i in range(max(first, min(bins)), fail)]
    if not before or sum(before) == 0:
        return None
    target = fraction * sum(before) / len(before)
    last = max(bins)
    series = [bins.get(i, 0) for i in range(fail - smooth + 1, last + 1)]
    smoothed = rolling_mean(series, smooth)[smooth - 1:]  # smoothed[k] is bin fail + k
    run = 0
    for k, value in enumerate(smoothed):
        run = run + 1 if value >= target else 0
        if run >= hold:
            start = k - hold + 1
            return 0.0 if start == 0 else round(start * bin_s + bin_s, 6)
    return None


def last_arrival(bins: Mapping[int, float], bin_s: float, t0: float) -> float | None:
    """The end of the last bin that received anything (absolute time), None if none did."""
    busy = [i for i, n in bins.items() if n > 0]
    return t0 + (max(busy) + 1) * bin_s if busy else None


def outcome(flow: str, record: Mapping, bins: Mapping[int, float], bin_s: float,
            t0: float, t_fail: float, horizon_s: float = 5.0, span: bool = False,
            crossed: bool = False, t_restore: float | None = None,
            slack_s: float = 0.05, t_end: float | None = None,
            quiet_s: float = 0.5) -> FlowRecovery:
    """One flow's outcome from its receiver summary (`gaps`, `lost`) and its bins; `crossed`
    says whether its path went through what failed (a flow can cross it and lose nothing).
    `t_end` (when its sender stopped) lets a flow silent for the last `quiet_s` be seen as
    never recovered."""
    gaps = record.get("gaps", [])
    window = loss_window(gaps, t_fail, horizon_s, slack_s, span=span)
    lost = int(record.get("lost", 0))
    at_restore = 0 if t_restore is None else min(lost, sum(
        int(g[2]) for g in gaps if len(g) > 2 and g[0] >= t_restore - slack_s))
    last = last_arrival(bins, bin_s, t0)
    dead = t_end is not None and (last is None or t_end - last > quiet_s)
    if dead and t_end is not None:  # (dead implies an end time)
        window = max(window, t_end - max(last or t0, t_fail - slack_s))
    affected = window > 0 or lost > 0 or dead
    recovery = recovery_time(bins, bin_s, t_fail - t0, smooth=10) if affected else 0.0
    return FlowRecovery(flow, round(window, 6), lost, None if dead else recovery, affected,
                       crossed, at_restore, recovered=not dead)
