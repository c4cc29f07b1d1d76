"""Which link the job waited on, from how long its messages took.

Every fabric message of a collective has its bytes and its time, from its send being posted to
its receiver having it all (`jobs.ccl.records`). A message is late when it took more than
`LATE` (50%) longer per byte than the median message of its collective. Each message has the
links the fabric model says every one of its shortest paths crosses (the NICs' own links
included). Over the job, each link counts the messages across it that were late and those that
were not: a degraded link makes every message across it late, while the noise of a busy
machine makes a few late anywhere. The link named has the largest late share (at least
`SUSPECT`, over at least `MIN_LATE` late messages); the switch port counters' packets on it are
the evidence (a link that drops and resends carries more packets than the data it delivered)
and break ties.

Messages whose paths are not certain (an ECMP choice) are known on their shared links only: a
degraded ECMP uplink is named only if the late messages have no other link in common. A ring
receives from one fixed neighbour, so its uplink and the receiver's downlink tie: both are
reported.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

DirectedLink = tuple[str, str]
LATE = 0.5  # a message is late when it took (1 + LATE) x its collective's median per byte
SUSPECT = 0.75  # the named link's messages were late this often at least
MIN_LATE = 3  # ... and this many of them


@dataclass(frozen=True)
class FlowTime:
    """One fabric message of a collective: from rank `src` to rank `dst`, `nbytes` in
    `duration_s` (from its send's post to its receiver having it all)."""

    collective: str
    step: int
    src: int
    dst: int
    nbytes: int
    duration_s: float


@dataclass
class Verdict:
    """The link named, why, and the collective step that shows it most."""

    link: DirectedLink | None
    delay_s: float  # what its late messages took beyond the median, summed
    late_share: dict[DirectedLink, float] = field(default_factory=dict)  # per link crossed
    worst_collective: str = ""
    worst_step: int = -1
    late_ranks: tuple[int, ...] = ()  # receivers of its late messages
    packets: int | None = None  # tx packets the switch counted on `link` while the job ran
    tied: tuple[DirectedLink, ...] = ()  # links timing cannot tell from `link` (a ring's
    # fixed sender: its uplink and the receiver's downlink carry the same late messages)

    def describe(self, rank_nic: Callable[[int], str] | None = None) -> str:
        if self.link is None:
            return ("no link stands out: no link's messages were late "
                    f"{SUSPECT:.0%} of the time (at least {MIN_LATE} of them)")
        who = ", ".join(rank_nic(r) if rank_nic else str(r) for r in self.late_ranks)
        share = self.late_share.get(self.link, 0.0)
        text = (f"link {self.link[0]} -> {self.link[1]}: {share:.0%} of the messages across it "
                f"arrived late (worst in {self.worst_collective} step {self.worst_step}, "
                f"late into: {who})")
        if self.packets is not None:
            text += f"; its port counted {self.packets} packets"
        if self.tied:
            text += "; equally likely: " + ", ".join(f"{a} -> {b}" for a, b in self.tied)
        return text


def late_flows(flows: Sequence[FlowTime]) -> list[tuple[FlowTime, float]]:
    """(message, its delay beyond the median) for the late messages (module docstring)."""
    by: dict[str, list[FlowTime]] = defaultdict(list)
    for f in flows:
        if f.nbytes > 0:
            by[f.collective].append(f)
    out = []
    for mine in by.values():
        median = statistics.median(f.duration_s / f.nbytes for f in mine)
        for f in mine:
            if f.duration_s / f.nbytes > (1 + LATE) * median:
                out.append((f, f.duration_s - median * f.nbytes))
    return out


def blame(flows: Sequence[FlowTime], links_of: Callable[[int, int], set[DirectedLink]],
          packets: Mapping[DirectedLink, int] | None = None) -> Verdict:
    """The link whose messages were late (module docstring), or none."""
    late = {id(f): delay for f, delay in late_flows(flows)}
    late_hits: Counter[DirectedLink] = Counter()
    on_time: Counter[DirectedLink] = Counter()
    delay_of: dict[DirectedLink, float] = defaultdict(float)
    step_delay: dict[DirectedLink, dict[tuple[str, int], float]] = defaultdict(dict)
    late_into: dict[DirectedLink, set[int]] = defaultdict(set)
    for f in flows:
        if f.nbytes <= 0:
            continue
        for ln in links_of(f.src, f.dst):
            if id(f) not in late:
                on_time[ln] += 1
                continue
            late_hits[ln] += 1
            delay_of[ln] += late[id(f)]
            key = (f.collective, f.step)
            step_delay[ln][key] = step_delay[ln].get(key, 0.0) + late[id(f)]
            late_into[ln].add(f.dst)
    share = {ln: late_hits[ln] / (late_hits[ln] + on_time[ln]) for ln in late_hits}
    suspects = [ln for ln in share if share[ln] >= SUSPECT and late_hits[ln] >= MIN_LATE]
    if not suspects:
        return Verdict(None, 0.0, share)
    count = packets or {}

    def rank(ln: DirectedLink) -> tuple[float, int, int]:
        return (round(share[ln], 9), late_hits[ln], count.get(ln, 0))

    link = max(suspects, key=rank)
    tied = tuple(sorted(ln for ln in suspects if ln != link and rank(ln)[:2] == rank(link)[:2]))
    collective, step = max(step_delay[link], key=step_delay[link].__getitem__)
    return Verdict(link, delay_of[link], share, collective, step,
                   tuple(sorted(late_into[link])),
                   count.get(link) if packets is not None else None, tied)
