"""NCCL-style collectives as schedules (`traffic.collectives.schedule`) over GPU ranks.

The data of a collective is cut into chunks; every flow names the chunks it carries, and a step
whose phase says `reduce` adds what it carries into the receiver's copy, any other step copies.
`final_state` replays a schedule that way, which is how the tests check that every rank ends
with what the collective promises (and no contribution is summed twice).

Algorithms (ranks in rank order; n ranks, G GPUs per server, M servers):
- ring: reduce-scatter then all-gather around the ring, 2(n-1) steps of S/n;
- hd (halving-doubling, Rabenseifner): log2 n reduce-scatter steps exchanging halves with the
  partner differing in one bit, then the all-gather in reverse; n a power of two;
- hierarchical: reduce-scatter inside each server over NVLink (G-1 steps), a ring all-reduce of
  its 1/G part on each rail across servers (GPU i of every server, 2(M-1) steps), all-gather
  inside the server (G-1 steps): only 1/G of the data leaves a server per NIC;
- alltoall flat: every rank sends S/n to every other, one step; pxn: first over NVLink to the
  local GPU on the destination's rail, then one rail hop (NCCL's PXN), two steps;
- broadcast: a pipelined chain from the root, n pieces; sendrecv: rank r sends S to r+1 (pxn as
  for alltoall).
Flows between GPUs of one server are tagged NVLINK (time, never packets), others FABRIC.
`Schedule.size` is nccl-tests' S and `busbw_factor` its factor (nccl-tests' doc/PERFORMANCE.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from jobs.gpus import Gpu
from traffic.collectives.schedule import FABRIC, NVLINK, Flow, Schedule, Step

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv")
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "hd", "hierarchical"),
    "all_gather": ("ring",),
    "reduce_scatter": ("ring",),
    "alltoall": ("flat", "pxn"),
    "broadcast": ("ring",),
    "sendrecv": ("flat", "pxn"),
}
DEFAULT_ALGORITHM = {name: algos[0] for name, algos in ALGORITHMS.items()}
REDUCE = "reduce"  # a phase name containing this reduces; others copy

Move = tuple[int, int, tuple[int, ...]]  # (src rank, dst rank, chunks)


def busbw_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw x this."""
    if collective == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        return (ranks - 1) / ranks
    if collective in ("broadcast", "sendrecv"):
        return 1.0
    raise ValueError(f"unknown collective {collective!r} (one of {', '.join(COLLECTIVES)})")


def chunk_count(collective: str, ranks: int) -> int:
    """How many chunks the data of a collective is cut into (alltoall: one per (src, dst))."""
    return ranks * ranks if collective == "alltoall" else ranks


def chunk_bytes(collective: str, ranks: int, size: int) -> int:
    """Bytes per chunk for nccl-tests' S = `size`: S/n, but a whole rank's buffer for sendrecv
    (one chunk per rank) and S/n per peer for alltoall (S is what each rank sends)."""
    return size if collective == "sendrecv" else -(-size // ranks)


def build(collective: str, algorithm: str, ranks: Sequence[Gpu], size: int,
          root: int = 0) -> Schedule:
    """The schedule of `collective` by `algorithm` on `ranks` (rank r on ranks[r]); `size` is
    nccl-tests' S in bytes."""
    n = len(ranks)
    if collective not in ALGORITHMS:
        raise ValueError(f"unknown collective {collective!r} (one of {', '.join(COLLECTIVES)})")
    if algorithm not in ALGORITHMS[collective]:
        raise ValueError(f"{collective} has no algorithm {algorithm!r} (one of "
                         f"{', '.join(ALGORITHMS[collective])})")
    if n < 2:
        raise ValueError(f"a collective needs at least 2 ranks, got {n}")
    if size <= 0:
        raise ValueError(f"size must be > 0 bytes, got {size}")
    if not 0 <= root < n:
        raise ValueError(f"root must be a rank 0..{n - 1}, got {root}")
    chunk = chunk_bytes(collective, n, size)
    everyone = list(range(n))
    phases: list[tuple[str, list[Move]]]
    if collective == "all_reduce" and algorithm == "ring":
        phases = _ring_reduce_scatter(everyone) + _ring_all_gather(everyone)
    elif collective == "all_reduce" and algorithm == "hd":
        phases = _halving_doubling(n)
    elif collective == "all_reduce":
        phases = _hierarchical(ranks)
    elif collective == "all_gather":
        phases = _ring_all_gather(everyone)
    elif collective == "reduce_scatter":
        phases = _ring_reduce_scatter(everyone)
    elif collective == "alltoall":
        phases = _alltoall(ranks, algorithm == "pxn")
    elif collective == "broadcast":
        phases = _broadcast(n, root)
    else:
        phases = _sendrecv(ranks, algorithm == "pxn")
    steps = []
    for phase, moves in phases:
        flows = [Flow(s, d, chunk * len(c), _link(ranks[s], ranks[d]), c) for s, d, c in moves]
        steps.append(Step(sorted(flows), phase))
    name = f"{collective}_{algorithm}"
    return Schedule(name, n, size, steps, busbw_factor(collective, n))


def _link(a: Gpu, b: Gpu) -> str:
    return NVLINK if a.server == b.server else FABRIC


# ---- building blocks: a phase is (name, moves) -------------------------------------------
def _ring_reduce_scatter(members: Sequence[int], blocks: Sequence[tuple[int, ...]] | None = None,
                         name: str = "reduce-scatter") -> list[tuple[str, list[Move]]]:
    """Ring over `members`: member i ends with block i summed over all members; step k,
    member i sends block i-k-1 to member i+1."""
    m = len(members)
    blocks = blocks if blocks is not None else [(c,) for c in members]
    return [(name, [(members[i], members[(i + 1) % m], blocks[(i - k - 1) % m])
                    for i in range(m)]) for k in range(m - 1)]


def _ring_all_gather(members: Sequence[int], blocks: Sequence[tuple[int, ...]] | None = None,
                     name: str = "all-gather") -> list[tuple[str, list[Move]]]:
    """Ring over `members`, member i holding block i: step k, member i passes block i-k on."""
    m = len(members)
    blocks = blocks if blocks is not None else [(c,) for c in members]
    return [(name, [(members[i], members[(i + 1) % m], blocks[(i - k) % m])
                    for i in range(m)]) for k in range(m - 1)]


def _halving_doubling(n: int) -> list[tuple[str, list[Move]]]:
    if n & (n - 1):
        raise ValueError(f"halving-doubling needs a power-of-two number of ranks, got {n}")
    held = {r: (0, n) for r in range(n)}  # each rank's range of chunks
    distances = [1 << k for k in range(n.bit_length() - 1)]
    rs: list[tuple[str, list[Move]]] = []
    for d in distances:
        moves = []
        new = {}
        for r in range(n):
            lo, hi = held[r]
            mid = (lo + hi) // 2
            keep, give = ((lo, mid), (mid, hi)) if not r & d else ((mid, hi), (lo, mid))
            moves.append((r, r ^ d, tuple(range(*give))))
            new[r] = keep
        held = new
        rs.append(("reduce-scatter", moves))
    ag: list[tuple[str, list[Move]]] = []
    for d in reversed(distances):
        moves = [(r, r ^ d, tuple(range(*held[r]))) for r in range(n)]
        held = {r: (min(held[r][0], held[r ^ d][0]), max(held[r][1], held[r ^ d][1]))
                for r in range(n)}
        ag.append(("all-gather", moves))
    return rs + ag


def _servers(ranks: Sequence[Gpu]) -> list[list[int]]:
    """Ranks grouped by server (servers in order of first appearance), each by local index."""
    by_server: dict[str, list[int]] = defaultdict(list)
    for r, g in enumerate(ranks):
        by_server[g.server].append(r)
    groups = [sorted(rs, key=lambda r: ranks[r].index) for rs in by_server.values()]
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise ValueError(f"hierarchical collectives need the same number of ranks on every "
                         f"server, got {sorted(sizes)}")
    return groups


def _hierarchical(ranks: Sequence[Gpu]) -> list[tuple[str, list[Move]]]:
    servers = _servers(ranks)
    g, m = len(servers[0]), len(servers)
    # chunk j*m + k: part j (GPU j's share after the in-server reduce-scatter), piece k
    parts = [tuple(j * m + k for k in range(m)) for j in range(g)]
    phases: list[tuple[str, list[Move]]] = []
    if g > 1:
        inner = [_ring_reduce_scatter(srv, parts, "nvlink reduce-scatter") for srv in servers]
        phases += [(p[0][0], [mv for srv in p for mv in srv[1]]) for p in zip(*inner, strict=True)]
    if m > 1:
        rails = [[srv[j] for srv in servers] for j in range(g)]
        outer = [_ring_reduce_scatter(rail, [(c,) for c in parts[j]], "rail reduce-scatter")
                 + _ring_all_gather(rail, [(c,) for c in parts[j]], "rail all-gather")
                 for j, rail in enumerate(rails)]
        phases += [(p[0][0], [mv for rail in p for mv in rail[1]])
                   for p in zip(*outer, strict=True)]
    if g > 1:
        inner = [_ring_all_gather(srv, parts, "nvlink all-gather") for srv in servers]
        phases += [(p[0][0], [mv for srv in p for mv in srv[1]]) for p in zip(*inner, strict=True)]
    return phases


def _relay(ranks: Sequence[Gpu], src: int, dst: int) -> int:
    """PXN: the GPU on `src`'s server that sits on `dst`'s rail (src itself if none)."""
    for r, g in enumerate(ranks):
        if g.server == ranks[src].server and g.rail == ranks[dst].rail:
            return r
    return src


def _routed(ranks: Sequence[Gpu], sends: list[tuple[int, int, int]], pxn: bool,
            name: str) -> list[tuple[str, list[Move]]]:
    """Chunk sends (src, dst, chunk) as one step, or with PXN as an NVLink step to the relay on
    the destination's rail and then a rail step; flows between one pair are merged."""
    if not pxn:
        return [(name, _merge(sends))]
    hop1, hop2 = [], []
    for s, d, c in sends:
        if ranks[s].server == ranks[d].server:
            hop1.append((s, d, c))
            continue
        relay = _relay(ranks, s, d)
        if relay != s:
            hop1.append((s, relay, c))
        hop2.append((relay, d, c))
    phases = []
    if hop1:
        phases.append((f"{name} nvlink", _merge(hop1)))
    if hop2:
        phases.append((f"{name} rail", _merge(hop2)))
    return phases


def _merge(sends: list[tuple[int, int, int]]) -> list[Move]:
    pairs: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s, d, c in sends:
        pairs[(s, d)].append(c)
    return [(s, d, tuple(sorted(cs))) for (s, d), cs in sorted(pairs.items())]


def _alltoall(ranks: Sequence[Gpu], pxn: bool) -> list[tuple[str, list[Move]]]:
    n = len(ranks)
    sends = [(s, d, s * n + d) for s in range(n) for d in range(n) if s != d]
    return _routed(ranks, sends, pxn, "alltoall")


def _sendrecv(ranks: Sequence[Gpu], pxn: bool) -> list[tuple[str, list[Move]]]:
    n = len(ranks)
    return _routed(ranks, [(r, (r + 1) % n, r) for r in range(n)], pxn, "sendrecv")


def _broadcast(n: int, root: int) -> list[tuple[str, list[Move]]]:
    """A chain root -> root+1 -> ... pipelined in n pieces: hop h forwards piece t-h at step t."""
    chain = [(root + i) % n for i in range(n)]
    pieces = n
    phases: list[tuple[str, list[Move]]] = []
    for t in range(pieces + n - 2):
        moves: list[Move] = [(chain[h], chain[h + 1], (t - h,))
                             for h in range(n - 1) if 0 <= t - h < pieces]
        phases.append(("broadcast", moves))
    return phases


# ---- what a schedule does to the data -----------------------------------------------------
State = list[dict[int, frozenset[int]]]  # per rank: chunk -> ranks whose data it sums


def initial_state(collective: str, n: int, root: int = 0) -> State:
    chunks = range(chunk_count(collective, n))
    if collective in ("all_reduce", "reduce_scatter"):
        return [{c: frozenset({r}) for c in chunks} for r in range(n)]
    if collective == "alltoall":
        return [{r * n + d: frozenset({r}) for d in range(n)} for r in range(n)]
    if collective == "broadcast":
        return [{c: frozenset({root}) for c in chunks} if r == root else {} for r in range(n)]
    return [{r: frozenset({r})} for r in range(n)]  # all_gather, sendrecv


def final_state(schedule: Schedule, collective: str, root: int = 0) -> State:
    """Replay a schedule's chunks; ValueError if a rank sends a chunk it does not hold or a
    reduction would count a contribution twice."""
    state = initial_state(collective, schedule.ranks, root)
    for i, step in enumerate(schedule.steps):
        before = [dict(s) for s in state]
        reduce = REDUCE in step.phase
        for f in step.flows:
            for c in f.chunks:
                if c not in before[f.src]:
                    raise ValueError(f"step {i}: rank {f.src} sends chunk {c} it does not hold")
                have = before[f.src][c]
                if reduce and c in state[f.dst]:
                    if state[f.dst][c] & have:
                        raise ValueError(f"step {i}: chunk {c} reduced twice at rank {f.dst}")
                    state[f.dst][c] = state[f.dst][c] | have
                else:
                    state[f.dst][c] = have
    return state


def expected_state(collective: str, n: int, root: int = 0) -> State:
    """What every rank must hold at the end (chunks it must have; it may hold more)."""
    everyone = frozenset(range(n))
    chunks = range(chunk_count(collective, n))
    if collective == "all_reduce":
        return [{c: everyone for c in chunks} for _ in range(n)]
    if collective == "reduce_scatter":
        return [{r: everyone} for r in range(n)]
    if collective == "all_gather":
        return [{c: frozenset({c}) for c in chunks} for _ in range(n)]
    if collective == "alltoall":
        return [{s * n + d: frozenset({s}) for s in range(n)} for d in range(n)]
    if collective == "broadcast":
        return [{c: frozenset({root}) for c in chunks} for _ in range(n)]
    return [{(r - 1) % n: frozenset({(r - 1) % n})} for r in range(n)]  # sendrecv
