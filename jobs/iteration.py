"""One training iteration on a time line: modelled compute, measured communication.

Everything here is in the modelled job's seconds. An iteration starts with the blocking
collectives (tensor, pipeline and expert parallelism: the compute waits for them, so they are
laid end to end before it), then the compute; the data-parallel buckets are released during
the backward pass (`Collective.release`, a fraction of the compute) and run one after another
on one stream, as NCCL runs them: a bucket starts when it is released and the previous bucket
is done. The iteration ends when the compute and the last bucket are both done:

    iteration = blocking + compute + exposed data-parallel communication

and exposed communication (`iteration - compute`) is what the compute did not hide.

Per rank the same line is drawn with that rank's own finishing time in each collective, so a
rank that waits longer on its last bytes has the longer iteration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    purpose: str
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Iteration:
    compute_s: float
    total_s: float
    spans: list[Span] = field(default_factory=list)  # communication, in the order issued

    @property
    def exposed_s(self) -> float:
        return self.total_s - self.compute_s

    @property
    def communication_s(self) -> float:
        return sum(s.duration for s in self.spans)

    @property
    def hidden_s(self) -> float:
        """Communication that ran under the compute."""
        return self.communication_s - self.exposed_s


@dataclass(frozen=True)
class Timed:
    """A collective's place in the iteration: how long it took, whether the compute waits for
    it (`overlappable` False) or it may run under the compute from `release` on."""

    purpose: str
    time_s: float
    release: float = 1.0
    overlappable: bool = False


def iteration(compute_s: float, collectives: Sequence[Timed]) -> Iteration:
    """Lay the collectives of one iteration around `compute_s` of compute (module docstring)."""
    if compute_s < 0:
        raise ValueError(f"compute time must be >= 0, got {compute_s}")
    spans: list[Span] = []
    t = 0.0
    for c in collectives:
        if not c.overlappable:
            spans.append(Span(c.purpose, t, t + c.time_s))
            t += c.time_s
    compute_start = t
    compute_end = compute_start + compute_s
    stream_free = compute_start
    for c in collectives:
        if c.overlappable:
            start = max(compute_start + c.release * compute_s, stream_free)
            spans.append(Span(c.purpose, start, start + c.time_s))
            stream_free = start + c.time_s
    return Iteration(compute_s, max(compute_end, stream_free), spans)
