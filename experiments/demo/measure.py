"""What each stage of the demo cost each flow, and whether the fabric recovered.

From the receivers' records and 10 ms bins:
- **loss window**: the receiver's silences that lost packets, starting within the stage's failure
  (`experiments.framework.recovery.loss_window`; for a silent drop the span of its losses);
- **outage**: the longest run of 10 ms bins without a single packet between the failure and the
  restore: what the timeline shows; a flow silent until the restore has no loss window yet (no
  packet after its silence) but an outage as long as the failure;
- **recovered**: over the last `TAIL_S` before the restore the flow delivers again (at least
  `MIN_RATE` of its nominal packets) and loses at most `MAX_LOSS` of what was sent then. Loss,
  not rate, is the test: on a busy machine senders and receivers are late (fewer packets, no
  loss), while a flow still on a dark or dropping path loses. A flow that crossed a failure and
  did not recover is an error of the fabric (except in the `none` stage, which shows exactly
  that), and so is a flow that is not delivering without loss at the end of the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from experiments.framework.recovery import loss_window

if TYPE_CHECKING:
    from experiments.demo.stages import Stage

MIN_RATE = 0.25  # of the nominal packets: delivering at all
MAX_LOSS = 0.05  # of the packets sent in the window: not losing
TAIL_S = 0.5


@dataclass
class StageOutcome:
    kind: str
    target: str
    flow: str
    crossed: bool
    loss_window_s: float
    outage_s: float  # longest run of empty bins while failed
    lost: int  # PSNs lost (skipped, never received) in the silences of this stage
    recovered: bool  # delivering without loss again before the restore

    @property
    def expected(self) -> bool:
        """Whether the outcome is what a working fabric does in this stage."""
        return self.recovered or self.kind == "none"


def packets(series: Mapping[int, int], size: int) -> dict[int, float]:
    return {i: n / size for i, n in series.items()}


def delivering(series: Mapping[int, float], gaps: Sequence[Sequence[float]], first: int,
               last: int, *, t0: float, bin_s: float, nominal_per_bin: float) -> bool:
    """Whether the flow delivers (`MIN_RATE`) without loss (`MAX_LOSS`) in bins first..last-1;
    `gaps` are the receiver's silences (last arrival before, first after, PSNs lost)."""
    if last <= first:
        return True
    received = sum(series.get(i, 0) for i in range(first, last))
    start, end = t0 + first * bin_s, t0 + last * bin_s
    lost = sum(int(g[2]) for g in gaps if len(g) > 2 and g[2] and g[1] >= start and g[0] < end)
    return (received >= MIN_RATE * nominal_per_bin * (last - first)
            and lost <= MAX_LOSS * (received + lost))


def longest_empty(series: Mapping[int, float], first: int, last: int) -> int:
    """The longest run of empty bins within first..last-1."""
    best = run = 0
    for i in range(first, last):
        run = run + 1 if series.get(i, 0) == 0 else 0
        best = max(best, run)
    return best


def stage_outcomes(stage: Stage, flows: Sequence[str], records: Mapping[str, Mapping],
                   bins: Mapping[str, Mapping[int, int]], *, t0: float, bin_s: float,
                   size: int, nominal_per_bin: float, slack_s: float = 0.05) -> list[StageOutcome]:
    failure = stage.failure
    first = int((failure.t_fail - t0) / bin_s)
    last = int((failure.t_restore - t0) / bin_s)
    tail = max(first, last - int(TAIL_S / bin_s))
    end = stage.t_settled or failure.t_restore
    out = []
    for name in flows:
        series = packets(bins.get(name, {}), size)
        gaps = records.get(name, {}).get("gaps", [])
        # silences from the failure until just before the restore (a restore costs its own)
        window = loss_window(gaps, failure.t_fail, failure.t_restore - failure.t_fail - 0.02,
                             slack_s, span=stage.kind == "silent")
        lost = sum(int(g[2]) for g in gaps
                   if len(g) > 2 and failure.t_fail - slack_s <= g[0] <= end)
        out.append(StageOutcome(
            stage.kind, failure.target, name, name in stage.crossing, round(window, 6),
            round(longest_empty(series, first, last) * bin_s, 6), lost,
            delivering(series, gaps, tail, last, t0=t0, bin_s=bin_s,
                       nominal_per_bin=nominal_per_bin)))
    return out


def not_back(flows: Sequence[str], records: Mapping[str, Mapping],
             bins: Mapping[str, Mapping[int, int]], *, t0: float, t_end: float, bin_s: float,
             size: int, nominal_per_bin: float, tail_s: float = 1.0) -> list[str]:
    """Flows not delivering without loss over the last `tail_s` of the run."""
    last = int((t_end - t0) / bin_s)
    first = last - int(tail_s / bin_s)
    return [name for name in flows
            if not delivering(packets(bins.get(name, {}), size),
                              records.get(name, {}).get("gaps", []), first, last, t0=t0,
                              bin_s=bin_s, nominal_per_bin=nominal_per_bin)]
