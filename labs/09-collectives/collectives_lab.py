"""Lab 9: collectives as schedules.

A schedule is a list of steps; the flows of a step run together, the steps one after another.
Rank r runs on the GPU ranks[r] (`jobs.gpus.Gpu`: its server, local index, NIC and rail; GPU i
of a server sits beside NIC i, on rail i). The data of a collective is cut into chunks of
`chunk_bytes(size, n)` bytes; every flow names the chunks it carries, and a step whose phase
contains "reduce" adds what arrives into the receiver's copy (any other step copies). Use
`flow()` to make a flow: it tags it NVLink inside a server and fabric between servers.

The ranks may come in any order (a launcher's, a topology-aware one): group them by server
with `servers()`, never by their position in the list.
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
    """Rank r starts with chunk r; in n-1 steps every rank passes a chunk to rank r+1, so all
    end with all n chunks (phase "all-gather")."""
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    steps: list[Step] = []
    # TODO 1: n-1 steps; in step k rank r sends rank (r+1) % n one chunk: which one does it
    # hold at step k that r+1 does not? (at k = 0 its own)
    _ = chunk
    return Schedule("all_gather_ring", n, size, steps, (n - 1) / n)


def hierarchical_all_reduce(ranks: list[Gpu], size: int) -> Schedule:
    """All-reduce in three phases (M servers of G GPUs, n = M*G chunks):
    1. "nvlink reduce-scatter": inside every server, a ring over its G GPUs; GPU j ends with
       its share, chunks j*M .. j*M+M-1, summed over the server;
    2. "rail reduce-scatter" then "rail all-gather": on every rail j (GPU j of each server), a
       ring all-reduce of GPU j's share across the M servers, one chunk per server;
    3. "nvlink all-gather": inside every server, a ring that gives every GPU every share.
    The rings of one phase (one per server, or one per rail) run side by side: their k-th
    steps are one step."""
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    steps: list[Step] = []
    # TODO 2: the four phases above; phase names must contain "reduce" exactly where data is
    # summed. Only flows of phase 2 may cross the fabric, and only along a rail.
    _ = chunk
    return Schedule("all_reduce_hierarchical", n, size, steps, 2 * (n - 1) / n)


def pxn_alltoall(ranks: list[Gpu], size: int) -> Schedule:
    """Chunk s*n+d goes from rank s to rank d (rank s starts with chunks s*n .. s*n+n-1). PXN:
    data for a GPU of another server first moves over NVLink to the GPU of s's server on d's
    rail (the relay; s itself when s is on that rail), then crosses the fabric on that rail;
    a chunk for a GPU of s's own server goes over NVLink in the first step. Two steps,
    "alltoall nvlink" and "alltoall rail"; merge the chunks one pair exchanges in a step into
    one flow."""
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    steps: list[Step] = []
    # TODO 3: the two steps (leave out a step that has no flow)
    _ = chunk
    return Schedule("alltoall_pxn", n, size, steps, (n - 1) / n)


__all__ = ["FABRIC", "NVLINK", "Flow", "Schedule", "Step", "chunk_bytes", "flow",
           "hierarchical_all_reduce", "pxn_alltoall", "ring_all_gather", "servers"]
