"""Collective algorithms as phases of chunk moves over GPU ranks (n ranks, G GPUs per server,
M servers; rank r on ranks[r]). A phase is (name, moves), a move (src, dst, chunks); the
registry (`jobs.ccl.collectives`) turns phases into a `Schedule`.

- ring (NCCL's rings): reduce-scatter then all-gather around a ring, 2(n-1) steps. On servers of
  several GPUs each ring snakes: it enters every server on one rail, visits its GPUs over
  NVLink and leaves on the next server's entry rail, alternating direction from server to
  server, so every fabric hop stays on one rail (for an even number of servers); ring `k`
  (a channel's) starts on rail k, so the channels' rings together send from every NIC;
- hd (halving-doubling, Rabenseifner): log2 n reduce-scatter steps exchanging halves with the
  partner one bit away, then the all-gather in reverse; n a power of two;
- hierarchical: reduce-scatter inside each server over NVLink, a ring all-reduce of its 1/G
  part on each rail across servers, all-gather inside the server: 1/G of the data leaves a
  server per NIC, only along its rail;
- alltoall flat: every rank sends every other its chunk at once; pxn: first over NVLink to the
  GPU of the sender's server on the receiver's rail, then one rail hop (NCCL's PXN);
- chain (broadcast, reduce): a chain along the ring order from the root (broadcast) or to it
  (reduce), of one chunk that the runtime cuts into slices, so the chain pipelines;
- sendrecv: rank r sends its buffer to r+1 (pxn as for alltoall).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jobs.gpus import Gpu

Move = tuple[int, int, tuple[int, ...]]  # (src rank, dst rank, chunks)
Phase = tuple[str, list[Move]]
Builder = Callable[[Sequence[Gpu], int, int], list[Phase]]  # (ranks, root, ring) -> phases


@dataclass(frozen=True)
class Algorithm:
    """An algorithm's phases, and in how many segments the runtime cuts each channel's data so
    that the phases overlap: segment k+1 starts its first phase (NVLink, say) while segment k
    is in its next (the rails), as NCCL pipelines its loops. One for a single-phase algorithm
    (a ring pipelines its steps through its slices)."""

    phases: Builder
    segments: int = 1


# ---- orders ------------------------------------------------------------------------------
def server_blocks(ranks: Sequence[Gpu]) -> list[list[int]] | None:
    """The ranks as consecutive runs of one server each, every server's in local GPU order;
    None when a server's ranks are not consecutive or servers differ in GPU count."""
    blocks: list[list[int]] = []
    for r, g in enumerate(ranks):
        if blocks and ranks[blocks[-1][0]].server == g.server:
            blocks[-1].append(r)
        else:
            blocks.append([r])
    servers = [ranks[b[0]].server for b in blocks]
    if len(set(servers)) != len(servers) or len({len(b) for b in blocks}) != 1:
        return None
    return [sorted(b, key=lambda r: ranks[r].index) for b in blocks]


def ring_order(ranks: Sequence[Gpu], ring: int = 0) -> list[int]:
    """Ring `ring`'s order of the ranks (module docstring): the rank order itself unless its
    servers come as consecutive blocks of several GPUs."""
    blocks = server_blocks(ranks)
    if blocks is None or len(blocks[0]) == 1:
        return list(range(len(ranks)))
    g = len(blocks[0])
    entry = ring % g
    order: list[int] = []
    for s, block in enumerate(blocks):
        if s % 2 == 0:  # enter on rail `entry`, leave on rail entry - 1
            order += block[entry:] + block[:entry]
        else:  # enter on rail entry - 1, leave on rail `entry`
            start = (entry - 1) % g
            order += [block[(start - k) % g] for k in range(g)]
    return order


# ---- building blocks -------------------------------------------------------------------------
def ring_reduce_scatter(members: Sequence[int], blocks: Sequence[tuple[int, ...]] | None = None,
                        name: str = "reduce-scatter") -> list[Phase]:
    """Ring over `members`: member i ends with block i reduced over all members; step k,
    member i sends block i-k-1 to member i+1."""
    m = len(members)
    blocks = blocks if blocks is not None else [(c,) for c in members]
    return [(name, [(members[i], members[(i + 1) % m], blocks[(i - k - 1) % m])
                    for i in range(m)]) for k in range(m - 1)]


def ring_all_gather(members: Sequence[int], blocks: Sequence[tuple[int, ...]] | None = None,
                    name: str = "all-gather") -> list[Phase]:
    """Ring over `members`, member i holding block i: step k, member i passes block i-k on."""
    m = len(members)
    blocks = blocks if blocks is not None else [(c,) for c in members]
    return [(name, [(members[i], members[(i + 1) % m], blocks[(i - k) % m])
                    for i in range(m)]) for k in range(m - 1)]


def servers(ranks: Sequence[Gpu]) -> list[list[int]]:
    """Ranks grouped by server (servers in order of first appearance), each by local index;
    ValueError if servers differ in GPU count."""
    by_server: dict[str, list[int]] = defaultdict(list)
    for r, g in enumerate(ranks):
        by_server[g.server].append(r)
    groups = [sorted(rs, key=lambda r: ranks[r].index) for rs in by_server.values()]
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise ValueError(f"hierarchical collectives need the same number of ranks on every "
                         f"server, got {sorted(sizes)}")
    return groups


def _side_by_side(groups: list[list[Phase]]) -> list[Phase]:
    """Phases of several groups that run side by side: their k-th phases are one step."""
    return [(parts[0][0], [mv for p in parts for mv in p[1]]) for parts in zip(*groups, strict=True)]


# ---- all-reduce --------------------------------------------------------------------------------
def ring_all_reduce(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
    order = ring_order(ranks, ring)
    return ring_reduce_scatter(order) + ring_all_gather(order)


def halving_doubling(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
    n = len(ranks)
    if n & (n - 1):
        raise ValueError(f"halving-doubling needs a power-of-two number of ranks, got {n}")
    held = {r: (0, n) for r in range(n)}  # each rank's range of chunks
    distances = [1 << k for k in range(n.bit_length() - 1)]
    rs: list[Phase] = []
    for d in distances:
        moves: list[Move] = []
        new = {}
        for r in range(n):
            lo, hi = held[r]
            mid = (lo + hi) // 2
            keep, give = ((lo, mid), (mid, hi)) if not r & d else ((mid, hi), (lo, mid))
            moves.append((r, r ^ d, tuple(range(*give))))
            new[r] = keep
        held = new
        rs.append(("reduce-scatter", moves))
    ag: list[Phase] = []
    for d in reversed(distances):
        moves = [(r, r ^ d, tuple(range(*held[r]))) for r in range(n)]
        held = {r: (min(held[r][0], held[r ^ d][0]), max(held[r][1], held[r ^ d][1]))
                for r in range(n)}
        ag.append(("all-gather", moves))
    return rs + ag


def hierarchical(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
    groups = servers(ranks)
    g, m = len(groups[0]), len(groups)
    # chunk j*m + k: part j (GPU j's share after the in-server reduce-scatter), piece k
    parts = [tuple(j * m + k for k in range(m)) for j in range(g)]
    phases: list[Phase] = []
    if g > 1:
        phases += _side_by_side([ring_reduce_scatter(srv, parts, "nvlink reduce-scatter")
                                 for srv in groups])
    if m > 1:
        rails = [[srv[j] for srv in groups] for j in range(g)]
        phases += _side_by_side([
            ring_reduce_scatter(rail, [(c,) for c in parts[j]], "rail reduce-scatter")
            + ring_all_gather(rail, [(c,) for c in parts[j]], "rail all-gather")
            for j, rail in enumerate(rails)])
    if g > 1:
        phases += _side_by_side([ring_all_gather(srv, parts, "nvlink all-gather")
                                 for srv in groups])
    return phases


# ---- all-gather, reduce-scatter -------------------------------------------------------------------
def ring_all_gather_only(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
    return ring_all_gather(ring_order(ranks, ring))


def ring_reduce_scatter_only(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
    return ring_reduce_scatter(ring_order(ranks, ring))


# ---- alltoall, sendrecv ---------------------------------------------------------------------------
def relay(ranks: Sequence[Gpu], src: int, dst: int) -> int:
    """PXN: the GPU on `src`'s server that sits on `dst`'s rail (src itself if none)."""
    for r, g in enumerate(ranks):
        if g.server == ranks[src].server and g.rail == ranks[dst].rail:
            return r
    return src


def _merge(sends: list[tuple[int, int, int]]) -> list[Move]:
    pairs: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s, d, c in sends:
        pairs[(s, d)].append(c)
    return [(s, d, tuple(sorted(cs))) for (s, d), cs in sorted(pairs.items())]


def routed(ranks: Sequence[Gpu], sends: list[tuple[int, int, int]], pxn: bool,
           name: str) -> list[Phase]:
    """Chunk sends (src, dst, chunk) as one step, or with PXN as an NVLink step to the relay on
    the destination's rail and then a rail step; flows between one pair are merged."""
    if not pxn:
        return [(name, _merge(sends))]
    hop1, hop2 = [], []
    for s, d, c in sends:
        if ranks[s].server == ranks[d].server:
            hop1.append((s, d, c))
            continue
        via = relay(ranks, s, d)
        if via != s:
            hop1.append((s, via, c))
        hop2.append((via, d, c))
    phases = []
    if hop1:
        phases.append((f"{name} nvlink", _merge(hop1)))
    if hop2:
        phases.append((f"{name} rail", _merge(hop2)))
    return phases


def alltoall(pxn: bool) -> Builder:
    def build(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
        n = len(ranks)
        sends = [(s, d, s * n + d) for s in range(n) for d in range(n) if s != d]
        return routed(ranks, sends, pxn, "alltoall")
    return build


def sendrecv(pxn: bool) -> Builder:
    def build(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
        n = len(ranks)
        return routed(ranks, [(r, (r + 1) % n, r) for r in range(n)], pxn, "sendrecv")
    return build


# ---- rooted ------------------------------------------------------------------------------------------
def _chain(ranks: Sequence[Gpu], root: int, ring: int) -> list[int]:
    order = ring_order(ranks, ring)
    at = order.index(root)
    return order[at:] + order[:at]


def chain_broadcast(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
    """root -> next -> ... along the ring order: one step per hop (the slices pipeline)."""
    chain = _chain(ranks, root, ring)
    return [("broadcast", [(chain[h], chain[h + 1], (0,))]) for h in range(len(chain) - 1)]


def chain_reduce(ranks: Sequence[Gpu], root: int, ring: int) -> list[Phase]:
    """The far end of the chain -> ... -> root, each hop adding its own data."""
    chain = _chain(ranks, root, ring)
    return [("reduce", [(chain[h], chain[h - 1], (0,))]) for h in range(len(chain) - 1, 0, -1)]
