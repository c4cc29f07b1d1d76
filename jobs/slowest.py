"""Which rank held the iteration back, and the link it waited on.

Every step of a collective starts on all ranks at one agreed moment, so a rank whose last byte
arrives late in a step was waiting on its own incoming flows. A rank is late in a step when it
finished more than `LATE` (50%) after the step's median rank. Each fabric flow into a rank has
the links the fabric model says every one of its shortest paths crosses (the NIC's own links
included). Over all steps, each link counts the flows across it that arrived late and those
that arrived on time: a degraded link makes every flow across it late, while the noise of a
busy machine makes a few flows late anywhere. The link named has the largest late share (at least `SUSPECT`, over at
least `MIN_LATE` late flows); the switch port counters' packets on it are the evidence (a link
that drops and resends carries more packets than the data it delivered) and break ties.

Flows whose paths are not certain (an ECMP choice) are known on their shared links only: a
degraded ECMP uplink is named only if the late flows have no other link in common. A ring
receives from one fixed neighbour, so its uplink and the receiver's downlink tie: both are
reported.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

DirectedLink = tuple[str, str]
LATE = 0.5  # a rank is late when it finishes after (1 + LATE) x the step's median rank
SUSPECT = 0.75  # the named link's flows were late this often at least
MIN_LATE = 3  # ... and this many of them


@dataclass(frozen=True)
class StepFlows:
    """One step's fabric flows as (src rank, dst rank) and each rank's finishing time (s from
    the step's start; 0.0 = received nothing)."""

    collective: str
    step: int
    flows: tuple[tuple[int, int], ...]
    rank_end_s: tuple[float, ...]


@dataclass
class Verdict:
    """The link named, why, and the step that shows it most."""

    link: DirectedLink | None
    delay_s: float  # summed delay (latest - median rank) of the steps its late flows were in
    late_share: dict[DirectedLink, float] = field(default_factory=dict)  # per link crossed
    worst_collective: str = ""
    worst_step: int = -1
    late_ranks: tuple[int, ...] = ()
    packets: int | None = None  # tx packets the switch counted on `link` while the job ran
    tied: tuple[DirectedLink, ...] = ()  # links timing cannot tell from `link` (a ring's
    # fixed sender: its uplink and the receiver's downlink carry the same late flow)

    def describe(self, rank_nic: Callable[[int], str] | None = None) -> str:
        if self.link is None:
            return ("no link stands out: no link's flows were late "
                    f"{SUSPECT:.0%} of the time (at least {MIN_LATE} of them)")
        who = ", ".join(rank_nic(r) if rank_nic else str(r) for r in self.late_ranks)
        share = self.late_share.get(self.link, 0.0)
        text = (f"link {self.link[0]} -> {self.link[1]}: {share:.0%} of the flows across it "
                f"arrived late (worst in {self.worst_collective} step {self.worst_step}, "
                f"late: {who})")
        if self.packets is not None:
            text += f"; its port counted {self.packets} packets"
        if self.tied:
            text += "; equally likely: " + ", ".join(f"{a} -> {b}" for a, b in self.tied)
        return text


def late_ranks(rank_end_s: Sequence[float]) -> tuple[int, ...]:
    """Ranks that finished more than `LATE` after the step's median rank (ranks that received
    nothing, 0.0, do not count)."""
    ends = [(r, t) for r, t in enumerate(rank_end_s) if t > 0]
    if len(ends) < 2:
        return ()
    cut = (1 + LATE) * statistics.median(t for _, t in ends)
    return tuple(r for r, t in ends if t > cut)


def blame(steps: Sequence[StepFlows], links_of: Callable[[int, int], set[DirectedLink]],
          packets: Mapping[DirectedLink, int] | None = None) -> Verdict:
    """The link whose flows were late (module docstring), or none."""
    late_hits: Counter[DirectedLink] = Counter()
    on_time: Counter[DirectedLink] = Counter()
    delay_of: dict[DirectedLink, float] = {}
    worst: dict[DirectedLink, tuple[float, StepFlows, tuple[int, ...]]] = {}
    for step in steps:
        late = set(late_ranks(step.rank_end_s))
        ends = [t for t in step.rank_end_s if t > 0]
        delay = max(ends) - statistics.median(ends) if late else 0.0
        for src, dst in step.flows:
            for ln in links_of(src, dst):
                if dst not in late:
                    on_time[ln] += 1
                    continue
                late_hits[ln] += 1
                delay_of[ln] = delay_of.get(ln, 0.0) + delay
                if delay > worst.get(ln, (0.0,))[0]:
                    worst[ln] = (delay, step, tuple(sorted(late)))
    share = {ln: late_hits[ln] / (late_hits[ln] + on_time[ln]) for ln in late_hits}
    suspects = [ln for ln in share if share[ln] >= SUSPECT and late_hits[ln] >= MIN_LATE]
    if not suspects:
        return Verdict(None, 0.0, share)
    count = packets or {}

    def rank(ln: DirectedLink) -> tuple[float, int, int]:
        return (round(share[ln], 9), late_hits[ln], count.get(ln, 0))

    link = max(suspects, key=rank)
    tied = tuple(sorted(ln for ln in suspects if ln != link and rank(ln)[:2] == rank(link)[:2]))
    _, step, late_set = worst[link]
    return Verdict(link, delay_of[link], share, step.collective, step.step, late_set,
                   count.get(link) if packets is not None else None, tied)
