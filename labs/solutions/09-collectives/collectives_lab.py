"""Lab 9: collectives as schedules (solution).

A schedule is a list of steps; the flows of a step run together, the steps one after another.
Rank r runs on the GPU ranks[r]. The data of a collective is cut into chunks of
`chunk_bytes(size, n)` bytes; every flow names the chunks it carries, and a step whose phase
contains "reduce" adds what arrives into the receiver's copy (any other step copies).
"""

from __future__ import annotations

from collections import defaultdict

from jobs.ccl.schedule import FABRIC, NVLINK, Flow, Schedule, Step
from jobs.gpus import Gpu


def chunk_bytes(size: int, n: int) -> int:
    """One chunk: S/n bytes, rounded up."""
    return -(-size // n)


def flow(ranks: list[Gpu], src: int, dst: int, chunks: tuple[int, ...], chunk: int) -> Flow:
    """A flow from rank `src` to rank `dst` carrying `chunks`: NVLink inside a server, the
    fabric between servers."""
    link = NVLINK if ranks[src].server == ranks[dst].server else FABRIC
    return Flow(src, dst, chunk * len(chunks), link, tuple(chunks))


def servers(ranks: list[Gpu]) -> list[list[int]]:
    """The ranks of every server (in order of first appearance), each in local GPU order."""
    by_server: dict[str, list[int]] = defaultdict(list)
    for r, gpu in enumerate(ranks):
        by_server[gpu.server].append(r)
    return [sorted(rs, key=lambda r: ranks[r].index) for rs in by_server.values()]


def ring_all_gather(ranks: list[Gpu], size: int) -> Schedule:
    """Rank r starts with chunk r; in n-1 steps every rank passes the chunk it received last to
    rank r+1, so all end with all n chunks."""
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    steps = []
    for k in range(n - 1):
        # at step k, rank r passes chunk r-k (its own at k = 0, then the one it received)
        steps.append(Step([flow(ranks, r, (r + 1) % n, ((r - k) % n,), chunk)
                           for r in range(n)], "all-gather"))
    return Schedule("all_gather_ring", n, size, steps, (n - 1) / n)


def _ring(members: list[int], blocks: list[tuple[int, ...]], reduce: bool) -> list[list[tuple]]:
    """A ring over `members`, member i owning block i: reduce-scatter (member i ends with block
    i summed) or all-gather (everyone ends with every block). One list of moves per step."""
    m = len(members)
    shift = 1 if reduce else 0
    return [[(members[i], members[(i + 1) % m], blocks[(i - k - shift) % m]) for i in range(m)]
            for k in range(m - 1)]


def hierarchical_all_reduce(ranks: list[Gpu], size: int) -> Schedule:
    """Reduce-scatter inside every server over NVLink, a ring all-reduce of each GPU's 1/G
    share on its rail across servers, all-gather inside every server."""
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    groups = servers(ranks)
    g, m = len(groups[0]), len(groups)
    # GPU j's share after the in-server reduce-scatter: chunks j*m .. j*m+m-1
    parts = [tuple(range(j * m, (j + 1) * m)) for j in range(g)]
    phases: list[tuple[str, list[list[tuple]]]] = []
    phases.append(("nvlink reduce-scatter", _merge([_ring(s, parts, True) for s in groups])))
    rails = [[s[j] for s in groups] for j in range(g)]
    pieces: list[list[tuple[int, ...]]] = [[(c,) for c in parts[j]] for j in range(g)]
    phases.append(("rail reduce-scatter",
                   _merge([_ring(rail, pieces[j], True) for j, rail in enumerate(rails)])))
    phases.append(("rail all-gather",
                   _merge([_ring(rail, pieces[j], False) for j, rail in enumerate(rails)])))
    phases.append(("nvlink all-gather", _merge([_ring(s, parts, False) for s in groups])))
    steps = [Step(sorted(flow(ranks, s, d, c, chunk) for s, d, c in moves), name)
             for name, step_list in phases for moves in step_list]
    return Schedule("all_reduce_hierarchical", n, size, steps, 2 * (n - 1) / n)


def _merge(rings: list[list[list[tuple]]]) -> list[list[tuple]]:
    """Rings that run side by side: their k-th steps become one step."""
    return [[move for ring in rings for move in ring[k]] for k in range(len(rings[0]))]


def pxn_alltoall(ranks: list[Gpu], size: int) -> Schedule:
    """Chunk s*n+d goes from rank s to rank d. PXN: first over NVLink to the GPU of s's server
    on d's rail, then across the fabric on that one rail."""
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    nvlink_hop: dict[tuple[int, int], list[int]] = defaultdict(list)
    rail_hop: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s in range(n):
        for d in range(n):
            if s == d:
                continue
            c = s * n + d
            if ranks[s].server == ranks[d].server:
                nvlink_hop[(s, d)].append(c)
                continue
            # the relay: the GPU of the source's server on the destination's rail
            relay = next(r for r, gpu in enumerate(ranks)
                         if gpu.server == ranks[s].server and gpu.rail == ranks[d].rail)
            if relay != s:
                nvlink_hop[(s, relay)].append(c)
            rail_hop[(relay, d)].append(c)
    steps = [Step(sorted(flow(ranks, s, d, tuple(cs), chunk) for (s, d), cs in hop.items()),
                  name) for name, hop in (("alltoall nvlink", nvlink_hop),
                                          ("alltoall rail", rail_hop)) if hop]
    return Schedule("alltoall_pxn", n, size, steps, (n - 1) / n)
