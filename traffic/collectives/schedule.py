"""Collective schedules: a list of steps, each a set of (src rank, dst rank, bytes) flows.

All steps run one after another; the flows of a step run in parallel. `size` is the data each
rank contributes (allreduce: the buffer size; all-to-all: what one rank sends in total;
incast: what each sender sends).

A flow crosses the fabric (`FABRIC`, packets between NICs) unless it is tagged `NVLINK`: a
transfer between GPUs of one server, which the runner models as time and never sends (`jobs`).
`chunks` optionally names the pieces of data a flow carries, so a schedule's end state can be
checked (`jobs.collectives.final_state`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

FABRIC, NVLINK = "fabric", "nvlink"


@dataclass(frozen=True, order=True)
class Flow:
    src: int
    dst: int
    bytes: int
    link: str = "fabric"  # FABRIC or NVLINK
    chunks: tuple[int, ...] = ()


@dataclass
class Step:
    flows: list[Flow]
    phase: str = ""

    def pairs(self) -> set[tuple[int, int]]:
        return {(f.src, f.dst) for f in self.flows}


@dataclass
class Schedule:
    name: str
    ranks: int
    size: int
    steps: list[Step] = field(default_factory=list)
    busbw_factor: float = 1.0  # bus bandwidth = algorithm bandwidth x this

    def total_bytes(self) -> int:
        return sum(f.bytes for s in self.steps for f in s.flows)


def _check(ranks: int, size: int, power_of_two: bool = False) -> None:
    if ranks < 2:
        raise ValueError(f"a collective needs at least 2 ranks, got {ranks}")
    if size <= 0:
        raise ValueError(f"size must be > 0 bytes, got {size}")
    if power_of_two and ranks & (ranks - 1):
        raise ValueError(f"halving-doubling needs a power-of-two number of ranks, got {ranks}")


def ring_allreduce(ranks: int, size: int) -> Schedule:
    """Reduce-scatter then allgather around the ring 0 -> 1 -> ... -> n-1 -> 0: 2(n-1) steps,
    each rank sending one chunk of size/n to its successor."""
    _check(ranks, size)
    chunk = -(-size // ranks)
    ring = [Flow(r, (r + 1) % ranks, chunk) for r in range(ranks)]
    steps = [Step(list(ring), "reduce-scatter") for _ in range(ranks - 1)]
    steps += [Step(list(ring), "allgather") for _ in range(ranks - 1)]
    return Schedule("ring_allreduce", ranks, size, steps, 2 * (ranks - 1) / ranks)


def halving_doubling_allreduce(ranks: int, size: int, near_first: bool = True) -> Schedule:
    """Recursive halving reduce-scatter, then recursive doubling allgather (Rabenseifner).

    Reduce-scatter step k (k = 1..log2 n) exchanges size/2^k bytes between partners r and
    r XOR d; the allgather replays the distances in reverse with growing data. `near_first`
    starts at distance 1 (1, 2, 4, ...), otherwise at n/2 (n/2, n/4, ..., 1).
    """
    _check(ranks, size, power_of_two=True)
    log = ranks.bit_length() - 1
    dists = [1 << k for k in range(log)]
    if not near_first:
        dists.reverse()
    steps = []
    for k, d in enumerate(dists, start=1):
        b = -(-size // (1 << k))
        steps.append(Step([Flow(r, r ^ d, b) for r in range(ranks)], "reduce-scatter"))
    for k, d in reversed(list(enumerate(dists, start=1))):
        b = -(-size // (1 << k))
        steps.append(Step([Flow(r, r ^ d, b) for r in range(ranks)], "allgather"))
    return Schedule("halving_doubling_allreduce", ranks, size, steps, 2 * (ranks - 1) / ranks)


def all_to_all(ranks: int, size: int, staged: bool = False) -> Schedule:
    """Every rank sends size/n to every other rank: one step with all n(n-1) flows, or
    (`staged`) n-1 steps where rank r sends to r+k in step k."""
    _check(ranks, size)
    chunk = -(-size // ranks)
    if staged:
        steps = [Step([Flow(r, (r + k) % ranks, chunk) for r in range(ranks)], f"shift {k}")
                 for k in range(1, ranks)]
    else:
        steps = [Step([Flow(s, d, chunk) for s in range(ranks) for d in range(ranks) if s != d])]
    return Schedule("all_to_all", ranks, size, steps, (ranks - 1) / ranks)


def incast(ranks: int, size: int, root: int = 0) -> Schedule:
    """N-to-1: every rank but `root` sends `size` bytes to `root` at once."""
    _check(ranks, size)
    if not 0 <= root < ranks:
        raise ValueError(f"incast root must be a rank 0..{ranks - 1}, got {root}")
    flows = [Flow(r, root, size) for r in range(ranks) if r != root]
    return Schedule("incast", ranks, size, [Step(flows, "incast")], 1.0)


ALGORITHMS = {
    "ring": ring_allreduce,
    "hd": halving_doubling_allreduce,
    "a2a": all_to_all,
    "incast": incast,
}


def build(algorithm: str, ranks: int, size: int) -> Schedule:
    try:
        make = ALGORITHMS[algorithm]
    except KeyError:
        known = ", ".join(ALGORITHMS)
        raise ValueError(f"unknown collective {algorithm!r} (one of {known})") from None
    return make(ranks, size)
