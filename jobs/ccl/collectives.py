"""The collectives, one record each (as nccl-tests' `struct testColl`): what a collective moves,
its bus bandwidth factor, whether it reduces or has a root, its algorithms, and where each
chunk of its data starts and must end. `COLLECTIVES` is the one registry: the runtime, `perf`,
`train` and the lab read everything about a collective here.

Data: a collective's data is cut into chunks (all_reduce, reduce_scatter, all_gather: n;
alltoall: n x n, chunk s*n+d going from rank s to rank d; broadcast and reduce: one, which the
runtime slices; sendrecv: n, rank r's buffer). `Chunk.holders` says which ranks hold a chunk at
the start and where in their input, `Chunk.targets` which must hold it at the end and where in
their output (element offsets); a reducing collective's target holds the reduction over all
holders. Counts follow nccl-tests' getCollByteCount (sendcount, recvcount, paramcount and the
in-place offsets), so sizes and buffers are nccl-tests'.

Adding a collective is one `Collective` in `COLLECTIVES` (and its algorithms' phases in
`jobs.ccl.algorithms`); tests/jobs/test_ccl_registry.py shows it with a toy one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from jobs.ccl import algorithms as algo
from jobs.ccl.schedule import FABRIC, NVLINK, Flow, Schedule, Step
from jobs.gpus import Gpu


@dataclass(frozen=True)
class Counts:
    """nccl-tests' element counts for one size: each rank's input and output, the `count`
    column, and where in-place the input sits in the output (or the output in the input), per
    rank index."""

    send: int
    recv: int
    param: int
    send_inplace: int = 0  # in place: input = output + rank * this
    recv_inplace: int = 0  # in place: output = input + rank * this


@dataclass(frozen=True)
class Chunk:
    elems: int
    holders: tuple[tuple[int, int], ...]  # (rank, input element offset) at the start
    targets: tuple[tuple[int, int], ...]  # (rank, output element offset) at the end


@dataclass(frozen=True)
class Collective:
    name: str
    summary: str
    factor: Callable[[int], float]  # busbw = algbw x factor(ranks)
    counts: Callable[[int, int, int], Counts]  # (elements asked for, ranks, element bytes)
    chunks: Callable[[Counts, int, int], list[Chunk]]  # (counts, ranks, root)
    algorithms: Mapping[str, algo.Algorithm]
    reduces: bool = False  # combines the ranks' data (has a reduction op)
    rooted: bool = False
    nominal_chunk: Callable[[int, int], int] = lambda size, n: -(-size // n)  # Flow.bytes

    @property
    def default_algorithm(self) -> str:
        return next(iter(self.algorithms))

    def algorithm(self, name: str | None) -> str:
        name = name or self.default_algorithm
        if name not in self.algorithms:
            raise ValueError(f"{self.name} has no algorithm {name!r} (one of "
                             f"{', '.join(self.algorithms)})")
        return name

    def size_column(self, counts: Counts, type_size: int) -> int:
        """nccl-tests' `size` column: the larger of a rank's input and output, in bytes."""
        return max(counts.send, counts.recv) * type_size


# ---- counts (nccl-tests' *GetCollByteCount) ----------------------------------------------------
def _same(count: int, n: int, elt: int) -> Counts:
    return Counts(count, count, count)


def _share(count: int, n: int, elt: int) -> int:
    """A rank's part of `count`, in whole 16-byte units (nccl-tests)."""
    return (count // n) & ~(max(1, 16 // elt) - 1)


def _gather(count: int, n: int, elt: int) -> Counts:  # all_gather: sends count/n, receives all
    base = _share(count, n, elt)
    return Counts(base, base * n, base, send_inplace=base)


def _scatter(count: int, n: int, elt: int) -> Counts:  # reduce_scatter: sends all, gets count/n
    base = _share(count, n, elt)
    return Counts(base * n, base, base, recv_inplace=base)


def _alltoall(count: int, n: int, elt: int) -> Counts:
    base = _share(count, n, elt)
    return Counts(base * n, base * n, base)


# ---- where the chunks are ------------------------------------------------------------------------
def _split(count: int, n: int) -> list[tuple[int, int]]:
    """`count` elements as n (offset, elems) pieces, as even as whole elements allow."""
    return [(i * count // n, (i + 1) * count // n - i * count // n) for i in range(n)]


def _reduced(counts: Counts, n: int, root: int) -> list[Chunk]:  # all_reduce
    everyone = range(n)
    return [Chunk(e, tuple((r, o) for r in everyone), tuple((r, o) for r in everyone))
            for o, e in _split(counts.send, n)]


def _scattered(counts: Counts, n: int, root: int) -> list[Chunk]:  # reduce_scatter
    b = counts.recv
    return [Chunk(b, tuple((r, c * b) for r in range(n)), ((c, 0),)) for c in range(n)]


def _gathered(counts: Counts, n: int, root: int) -> list[Chunk]:  # all_gather
    b = counts.send
    return [Chunk(b, ((c, 0),), tuple((r, c * b) for r in range(n))) for c in range(n)]


def _exchanged(counts: Counts, n: int, root: int) -> list[Chunk]:  # alltoall
    b = counts.param
    return [Chunk(b, ((s, d * b),), ((d, s * b),)) for s in range(n) for d in range(n)]


def _broadcast(counts: Counts, n: int, root: int) -> list[Chunk]:
    return [Chunk(counts.send, ((root, 0),), tuple((r, 0) for r in range(n)))]


def _reduce(counts: Counts, n: int, root: int) -> list[Chunk]:
    return [Chunk(counts.send, tuple((r, 0) for r in range(n)), ((root, 0),))]


def _ring_passed(counts: Counts, n: int, root: int) -> list[Chunk]:  # sendrecv
    return [Chunk(counts.send, ((r, 0),), (((r + 1) % n, 0),)) for r in range(n)]


A = algo.Algorithm
PIPELINED = 2  # segments of a multi-phase algorithm (NVLink and rail phases overlap)

COLLECTIVES: dict[str, Collective] = {c.name: c for c in (
    Collective("all_reduce", "every rank ends with the reduction of every rank's buffer",
               lambda n: 2 * (n - 1) / n, _same, _reduced,
               {"ring": A(algo.ring_all_reduce), "hd": A(algo.halving_doubling),
                "hierarchical": A(algo.hierarchical, PIPELINED)}, reduces=True),
    Collective("all_gather", "every rank ends with every rank's buffer, in rank order",
               lambda n: (n - 1) / n, _gather, _gathered,
               {"ring": A(algo.ring_all_gather_only)}),
    Collective("reduce_scatter", "rank r ends with part r of the reduction",
               lambda n: (n - 1) / n, _scatter, _scattered,
               {"ring": A(algo.ring_reduce_scatter_only)}, reduces=True),
    Collective("alltoall", "rank s sends part d of its buffer to rank d",
               lambda n: (n - 1) / n, _alltoall, _exchanged,
               {"flat": A(algo.alltoall(pxn=False)),
                "pxn": A(algo.alltoall(pxn=True), PIPELINED)}),
    Collective("broadcast", "every rank ends with the root's buffer", lambda n: 1.0, _same,
               _broadcast, {"chain": A(algo.chain_broadcast)}, rooted=True,
               nominal_chunk=lambda size, n: size),
    Collective("reduce", "the root ends with the reduction of every rank's buffer",
               lambda n: 1.0, _same, _reduce, {"chain": A(algo.chain_reduce)}, reduces=True,
               rooted=True, nominal_chunk=lambda size, n: size),
    Collective("sendrecv", "rank r sends its buffer to rank r+1", lambda n: 1.0, _same,
               _ring_passed, {"flat": A(algo.sendrecv(pxn=False)),
                              "pxn": A(algo.sendrecv(pxn=True), PIPELINED)},
               nominal_chunk=lambda size, n: size),
)}


def get(name: str) -> Collective:
    try:
        return COLLECTIVES[name]
    except KeyError:
        raise ValueError(f"unknown collective {name!r} (one of {', '.join(COLLECTIVES)})") from None


def busbw_factor(name: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw x this."""
    return get(name).factor(ranks)


def chunk_bytes(name: str, ranks: int, size: int) -> int:
    """Bytes per chunk, nominally, for nccl-tests' S = `size` (Flow.bytes)."""
    return get(name).nominal_chunk(size, ranks)


def build(name: str, algorithm: str | None, ranks: Sequence[Gpu], size: int, root: int = 0,
          ring: int = 0) -> Schedule:
    """The schedule of collective `name` by `algorithm` on `ranks` (rank r on ranks[r]);
    `size` is nccl-tests' S in bytes; `ring` picks a channel's ring (ring algorithms)."""
    coll = get(name)
    algorithm = coll.algorithm(algorithm)
    n = len(ranks)
    if n < 2:
        raise ValueError(f"a collective needs at least 2 ranks, got {n}")
    if size < 0:
        raise ValueError(f"size must be >= 0 bytes, got {size}")
    if not 0 <= root < n:
        raise ValueError(f"root must be a rank 0..{n - 1}, got {root}")
    chunk = coll.nominal_chunk(size, n)
    steps = []
    for phase, moves in coll.algorithms[algorithm].phases(ranks, root, ring):
        flows = [Flow(s, d, chunk * len(c), NVLINK if ranks[s].server == ranks[d].server
                      else FABRIC, c) for s, d, c in moves]
        steps.append(Step(sorted(flows), phase))
    return Schedule(f"{name}_{algorithm}", n, size, steps, coll.factor(n))


# ---- what a schedule does to the data ---------------------------------------------------------------
Holding = dict[int, frozenset[int]]  # chunk -> the ranks whose data it holds (reduced)


@dataclass(frozen=True)
class Moved:
    """One chunk of one flow: what the sender held, what the receiver had, and whether the
    step reduced them (else the receiver's copy is replaced)."""

    step: int
    flow: Flow
    chunk: int
    sent: frozenset[int] | None  # None: the sender did not hold it
    had: frozenset[int] | None
    reduced: bool

    @property
    def now(self) -> frozenset[int]:
        sent = self.sent or frozenset()
        return (self.had | sent) if self.reduced and self.had is not None else sent


def initial_state(chunks: Sequence[Chunk], n: int) -> list[Holding]:
    state: list[Holding] = [{} for _ in range(n)]
    for c, chunk in enumerate(chunks):
        for r, _ in chunk.holders:
            state[r][c] = frozenset({r})
    return state


def expected_holdings(chunks: Sequence[Chunk], n: int) -> list[Holding]:
    want: list[Holding] = [{} for _ in range(n)]
    for c, chunk in enumerate(chunks):
        whose = frozenset(r for r, _ in chunk.holders)
        for r, _ in chunk.targets:
            want[r][c] = whose
    return want


def replay(schedule: Schedule, chunks: Sequence[Chunk]) -> tuple[list[Holding], list[Moved]]:
    """Every chunk of every flow, step by step: a step reads what ranks held before it."""
    state = initial_state(chunks, schedule.ranks)
    moved: list[Moved] = []
    for i, step in enumerate(schedule.steps):
        before = [dict(s) for s in state]
        for f in step.flows:
            for c in f.chunks:
                had = state[f.dst].get(c)
                m = Moved(i, f, c, before[f.src].get(c), had, step.reduces and had is not None)
                state[f.dst][c] = m.now
                moved.append(m)
    return state, moved


def _structure(name: str, n: int, root: int) -> list[Chunk]:
    coll = get(name)
    return coll.chunks(coll.counts(n * n * 16, n, 1), n, root)  # every chunk non-empty


def final_state(schedule: Schedule, collective: str, root: int = 0) -> list[Holding]:
    """Replay a schedule's chunks; ValueError if a rank sends a chunk it does not hold or a
    reduction would count a contribution twice."""
    state, moved = replay(schedule, _structure(collective, schedule.ranks, root))
    for m in moved:
        if m.sent is None:
            raise ValueError(f"step {m.step}: rank {m.flow.src} sends chunk {m.chunk} it does "
                             f"not hold")
        if m.reduced and m.had is not None and m.had & m.sent:
            raise ValueError(f"step {m.step}: chunk {m.chunk} reduced twice at rank {m.flow.dst}")
    return state


def expected_state(collective: str, n: int, root: int = 0) -> list[Holding]:
    """What every rank must hold at the end (chunks it must have; it may hold more)."""
    return expected_holdings(_structure(collective, n, root), n)
