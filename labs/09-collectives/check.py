"""Checks of lab 9 (collectives as schedules): the student's ring all-gather, hierarchical
all-reduce and PXN alltoall, replayed chunk by chunk (`jobs.ccl.collectives.final_state`) on HPN
7.0 and AIPod and on hidden cluster shapes; then, as root, the hierarchical all-reduce against
the ring on a real HPN 7.0 segment, run by the collective runtime with real data."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

from fabric_lab.labkit import Step, StepFailed, Work
from jobs.ccl.algorithms import ring_all_gather, ring_reduce_scatter
from jobs.ccl.collectives import build as build_schedule
from jobs.ccl.collectives import busbw_factor, chunk_bytes, expected_state, final_state
from jobs.ccl.schedule import FABRIC, NVLINK, Flow, Schedule
from jobs.ccl.schedule import Step as ScheduleStep
from jobs.gpus import Gpu, cluster_from_fabric
from topos import build_fabric

TITLE = "Collectives as schedules: ring, hierarchical, PXN; nccl-tests busbw"
MINUTES = 75
PREREQS = "lab 7; docs/jobs/perf.md"
FILE = "collectives_lab.py"
FORBIDDEN_IMPORTS = {
    "jobs.ccl.collectives": "the lab's collective library builds these schedules; write them "
                            "yourself",
    "jobs.ccl.algorithms": "the lab's collective library builds these schedules; write them "
                           "yourself",
    "importlib": "import modules with import statements",
}
FUNCTIONS = {"all_gather": "ring_all_gather", "all_reduce": "hierarchical_all_reduce",
             "alltoall": "pxn_alltoall"}
HANDOUT_SIZE = 1 << 20


def _gpus(fabric: str) -> list[Gpu]:
    return cluster_from_fabric(build_fabric(fabric)).gpus()


def _where(ranks: list[Gpu], r: int) -> str:
    return f"rank {r} ({ranks[r].server} GPU {ranks[r].index})"


def _schedule(work: Work, collective: str, ranks: list[Gpu], size: int, case: str) -> Schedule:
    """The student's schedule for `collective`, checked flow by flow and replayed: every rank
    must end with what the collective promises."""
    name = FUNCTIONS[collective]
    got = work.function(name)(list(ranks), size)
    n = len(ranks)
    if not isinstance(got, Schedule):
        raise StepFailed(f"{case}: {name}() returned {type(got).__name__}, not a Schedule")
    if (got.ranks, got.size) != (n, size):
        raise StepFailed(f"{case}: Schedule(ranks={got.ranks}, size={got.size}); expected "
                         f"ranks={n}, size={size}")
    if abs(got.busbw_factor - busbw_factor(collective, n)) > 1e-9:
        raise StepFailed(f"{case}: busbw_factor {got.busbw_factor:g}; nccl-tests' factor for "
                         f"{collective} on {n} ranks is {busbw_factor(collective, n):g}")
    chunk = chunk_bytes(collective, n, size)
    for i, step in enumerate(got.steps):
        for f in step.flows:
            if not (0 <= f.src < n and 0 <= f.dst < n) or f.src == f.dst:
                raise StepFailed(f"{case}: step {i}: a flow {f.src} -> {f.dst} (ranks are "
                                 f"0..{n - 1}, a rank never sends to itself)")
            link = NVLINK if ranks[f.src].server == ranks[f.dst].server else FABRIC
            if f.link != link or not f.chunks or f.bytes != chunk * len(f.chunks):
                raise StepFailed(
                    f"{case}: step {i}: {_where(ranks, f.src)} -> {_where(ranks, f.dst)} is "
                    f"tagged {f.link!r} with {f.bytes} B for chunks {f.chunks}; expected "
                    f"{link!r}, {chunk} B per chunk (make flows with flow())")
    try:
        state = final_state(got, collective)
    except ValueError as err:
        raise StepFailed(f"{case}: {err}") from None
    for r, want in enumerate(expected_state(collective, n)):
        for c, ranks_summed in want.items():
            have = state[r].get(c)
            if have != ranks_summed:
                held = (f"lacks chunk {c}" if have is None
                        else f"holds chunk {c} as the data of ranks {sorted(have)}")
                raise StepFailed(f"{case}: at the end {_where(ranks, r)} {held}; it must hold "
                                 f"it as the data of ranks {sorted(ranks_summed)}"
                                 + (" summed" if len(ranks_summed) > 1 else ""))
    return got


def _fabric_bytes(schedule: Schedule) -> Counter:
    """Bytes every rank's NIC sends into the fabric."""
    sent: Counter = Counter()
    for step in schedule.steps:
        for f in step.flows:
            if f.link == FABRIC:
                sent[f.src] += f.bytes
    return sent


def _on_rails(schedule: Schedule, ranks: list[Gpu], case: str) -> None:
    for i, step in enumerate(schedule.steps):
        for f in step.flows:
            if f.link == FABRIC and ranks[f.src].rail != ranks[f.dst].rail:
                raise StepFailed(f"{case}: step {i} ({step.phase}): {_where(ranks, f.src)} on "
                                 f"rail {ranks[f.src].rail} sends over the fabric to "
                                 f"{_where(ranks, f.dst)} on rail {ranks[f.dst].rail}: across "
                                 f"rails only over NVLink")


def _shape(ranks: list[Gpu]) -> tuple[int, int]:
    """(servers M, GPUs per server G)."""
    return len({g.server for g in ranks}), len(ranks) // len({g.server for g in ranks})


# ---- what each algorithm must be -----------------------------------------------------------
def _ring(work: Work, ranks: list[Gpu], size: int, case: str) -> Schedule:
    got = _schedule(work, "all_gather", ranks, size, case)
    n = len(ranks)
    if len(got.steps) != n - 1:
        raise StepFailed(f"{case}: {len(got.steps)} steps; a ring all-gather over {n} ranks "
                         f"takes {n - 1}")
    for i, step in enumerate(got.steps):
        pairs = sorted((f.src, f.dst, len(f.chunks)) for f in step.flows)
        if pairs != [(r, (r + 1) % n, 1) for r in range(n)]:
            raise StepFailed(f"{case}: step {i} sends {[(s, d) for s, d, _ in pairs]} with "
                             f"{[k for *_, k in pairs]} chunk(s); in a ring every rank r sends "
                             f"one chunk to r+1")
    return got


def _hierarchical(work: Work, ranks: list[Gpu], size: int, case: str) -> Schedule:
    got = _schedule(work, "all_reduce", ranks, size, case)
    _on_rails(got, ranks, case)
    m, g = _shape(ranks)
    chunk = chunk_bytes("all_reduce", len(ranks), size)
    most = 2 * (m - 1) * chunk
    heaviest = max(_fabric_bytes(got).values(), default=0)
    if heaviest > most:
        raise StepFailed(f"{case}: a NIC sends {heaviest} B into the fabric; the rail ring "
                         f"all-reduce of a GPU's share sends 2(M-1) chunks = {most} B (M = {m})")
    steps = 2 * (g - 1) + 2 * (m - 1)
    if len(got.steps) > steps:
        raise StepFailed(f"{case}: {len(got.steps)} steps; rings that run side by side take "
                         f"2(G-1) + 2(M-1) = {steps} (G = {g}, M = {m})")
    return got


def _pxn(work: Work, ranks: list[Gpu], size: int, case: str) -> Schedule:
    got = _schedule(work, "alltoall", ranks, size, case)
    _on_rails(got, ranks, case)
    if len(got.steps) > 2:
        raise StepFailed(f"{case}: {len(got.steps)} steps; PXN takes two (NVLink, then rail)")
    crossing = sum(1 for s in ranks for d in ranks if s.server != d.server)
    carried = sum(len(f.chunks) for step in got.steps for f in step.flows if f.link == FABRIC)
    if carried != crossing:
        raise StepFailed(f"{case}: the fabric carries {carried} chunks; {crossing} go to "
                         f"another server and each crosses the fabric once")
    return got


def _cross_rail_flows(schedule: Schedule, ranks: list[Gpu]) -> int:
    return sum(1 for step in schedule.steps for f in step.flows
               if f.link == FABRIC and ranks[f.src].rail != ranks[f.dst].rail)


# ---- the steps ---------------------------------------------------------------------------
def loads(work: Work) -> str:
    for name in FUNCTIONS.values():
        work.function(name)
    return f"{', '.join(FUNCTIONS.values())} found (no library collective imported)"


def ring_on_hpn7(work: Work) -> str:
    ranks = _gpus("hpn7")
    got = _ring(work, ranks, HANDOUT_SIZE, "hpn7, 8 ranks, 1 MB")
    _ring(work, _gpus("aipod"), HANDOUT_SIZE, "aipod, 16 ranks, 1 MB")
    nv = sum(f.bytes for s in got.steps for f in s.flows if f.link == NVLINK)
    fab = sum(_fabric_bytes(got).values())
    return (f"hpn7: {len(got.steps)} steps, every rank ends with all {len(ranks)} chunks; "
            f"{fab // 1024} KB over the "
            f"fabric, {nv // 1024} KB over NVLink; {_cross_rail_flows(got, ranks)} fabric "
            f"flows cross rails")


def _rank_order_ring(ranks: list[Gpu], size: int) -> Schedule:
    """The ring all-reduce in plain rank order, blind to rails (NCCL's ring order is not)."""
    n = len(ranks)
    chunk = chunk_bytes("all_reduce", n, size)
    order = list(range(n))
    steps = [ScheduleStep(sorted(Flow(s, d, chunk * len(c),
                                      NVLINK if ranks[s].server == ranks[d].server
                                      else FABRIC, c) for s, d, c in moves), phase)
             for phase, moves in ring_reduce_scatter(order) + ring_all_gather(order)]
    return Schedule("all_reduce_rank_order_ring", n, size, steps,
                    busbw_factor("all_reduce", n))


def hierarchical_on_hpn7(work: Work) -> str:
    ranks = _gpus("hpn7")
    mine = _hierarchical(work, ranks, HANDOUT_SIZE, "hpn7, 8 ranks, 1 MB")
    ring = build_schedule("all_reduce", "ring", ranks, HANDOUT_SIZE)
    kb = HANDOUT_SIZE // 1024
    m, g = _shape(ranks)
    return (f"hpn7 (M = {m} servers, G = {g}): all {len(ranks)} ranks end with the sum; "
            f"fabric flows on "
            f"their rail only; the busiest NIC sends {max(_fabric_bytes(mine).values()) // 1024} "
            f"KB of {kb} KB (flat ring: {max(_fabric_bytes(ring).values()) // 1024} KB, "
            f"{_cross_rail_flows(ring, ranks)} fabric flows across rails)")


def hierarchical_topology_order(work: Work) -> str:
    gpus = _gpus("aipod")
    shown = []
    for name, ranks in (("aipod, naive order", gpus),
                        ("aipod, ranks interleaved across servers",
                         sorted(gpus, key=lambda g: (g.index, g.server)))):
        got = _hierarchical(work, ranks, 3 * HANDOUT_SIZE // 4, name)
        shown.append(f"{name}: {len(got.steps)} steps")
    return "; ".join(shown) + " (rings side by side, 2(M-1) chunks per NIC)"


def pxn_on_hpn7(work: Work) -> str:
    notes = []
    for fabric in ("hpn7", "aipod"):
        ranks = _gpus(fabric)
        mine = _pxn(work, ranks, HANDOUT_SIZE, f"{fabric}, {len(ranks)} ranks, 1 MB")
        flat = build_schedule("alltoall", "flat", ranks, HANDOUT_SIZE)
        notes.append(f"{fabric}: {len(mine.steps)} steps, no fabric flow across rails "
                     f"(flat: {_cross_rail_flows(flat, ranks)} of "
                     f"{sum(f.link == FABRIC for s in flat.steps for f in s.flows)})")
    return "; ".join(notes)


def _cluster(rng_servers: int, per_server: int, tag: str) -> list[Gpu]:
    return [Gpu(f"{tag}{s}", i, f"{tag}{s}n{i}", f"10.9.{s}.{i + 1}", i)
            for s in range(rng_servers) for i in range(per_server)]


def hidden_shapes(work: Work) -> str:
    """Hidden cases: clusters of M servers x G GPUs drawn per run (one server, one GPU per
    server, up to 5 x 4), odd sizes, ranks in a shuffled order."""
    rng = work.rng("shapes")
    checks: list[tuple[str, Callable[..., Schedule]]] = [
        ("ring all-gather", _ring), ("hierarchical all-reduce", _hierarchical),
        ("PXN alltoall", _pxn)]
    shapes = [(1, rng.randint(2, 4)), (rng.randint(2, 5), 1)]
    shapes += [(rng.randint(2, 5), rng.randint(2, 4)) for _ in range(4)]
    shown = []
    for k, (m, g) in enumerate(shapes):
        ranks = _cluster(m, g, rng.choice("pqrsuvw") + "s")
        if k % 2:
            rng.shuffle(ranks)
        size = rng.randint(len(ranks) * 4, 1 << 20)
        order = "shuffled" if k % 2 else "in order"
        for name, check in checks:
            check(work, ranks, size, f"hidden case: {name}, {m} server(s) x {g} GPU(s), ranks "
                                     f"{order}, {size} B")
        shown.append(f"{m}x{g}")
    return f"hidden shapes {', '.join(shown)} (servers x GPUs), odd sizes: all three right"


def live_segment(work: Work) -> str:
    """A short real run: one HPN 7.0 segment (2 servers x 2 GPUs, 4 ToRs, 2 aggregation
    switches), the flat ring and the student's hierarchical all-reduce of 256 KB, run by the
    collective runtime with real data (every rank's output checked), the switches' transmit
    counters read."""
    if os.geteuid() != 0:
        raise StepFailed("this step builds a Mininet fabric and needs root: sudo fabric-lab lab "
                         "check 9")
    from jobs.scale import MODELLED_GBPS
    from jobs.train_fabric import JobFabric
    from topos.relocate import prefixed

    # ports below Linux's ephemeral range (32768-60999), as lab 6's last step
    spec = prefixed(build_fabric("hpn7", segments=1, aggs_per_plane=1, rate_mbps=100.0),
                    "lq", 26559, 26090).with_mtu(4200)
    size = 256 * 1024
    aggs = {sw.name for sw in spec.switches if sw.role == "agg"}
    seen = {}
    with JobFabric(spec) as lab:
        ranks = lab.cluster.gpus()
        mine = _hierarchical(work, ranks, size, "hpn7 segment, 4 ranks, 256 KB")
        ring = _rank_order_ring(ranks, size)
        for name, schedule in (("ring", ring), ("yours", mine)):
            before = lab.tx_bytes()
            result = lab.run(lab.compile("all_reduce", "ring", [ranks], size,
                                         schedule=schedule))
            via_aggs = sum(n for k, n in (lab.tx_bytes() - before).items() if aggs & set(k))
            if not result.complete or result.wrong:
                raise StepFailed(f"{name}: data missing or wrong at the ranks "
                                 f"(complete={result.complete}, #wrong={result.wrong})")
            algbw = lab.rate.rate_bps(size / result.time_s) / 1e9 if result.time_s else 0.0
            seen[name] = (algbw * busbw_factor("all_reduce", len(ranks)), via_aggs)
    if seen["yours"][1]:
        raise StepFailed(f"your all-reduce sent {seen['yours'][1]} B through the aggregation "
                         f"switches; inside one segment a rail crosses one ToR only")
    return (f"ring in rank order: busbw {seen['ring'][0]:.1f} GB/s, {seen['ring'][1] // 1024} KB "
            f"through the "
            f"aggregation switches; yours: busbw {seen['yours'][0]:.1f} GB/s, 0 B through them "
            f"(modelled units: an emulated NIC of 2 x 100 Mb/s stands for "
            f"{MODELLED_GBPS:g} Gb/s); every rank's output right")


STEPS = [
    Step("defines ring_all_gather(), hierarchical_all_reduce(), pxn_alltoall()", loads,
         "keep the functions' names and arguments; build flows with jobs.ccl.schedule"),
    Step("ring all-gather on HPN 7.0 and AIPod: every rank ends with every chunk", ring_on_hpn7,
         "TODO 1: at step k rank r forwards chunk (r - k) % n, the one it received at step k-1"),
    Step("hierarchical all-reduce on HPN 7.0: the sum everywhere, the fabric on rails only",
         hierarchical_on_hpn7,
         "TODO 2: only the rail phase crosses servers, and only between GPUs of the same local "
         "index; phases that sum must have 'reduce' in their name"),
    Step("hierarchical all-reduce in any rank order: rings side by side, 2(M-1) chunks per NIC",
         hierarchical_topology_order,
         "group ranks with servers(), never by position; run the rings of a phase as one step"),
    Step("PXN alltoall on HPN 7.0 and AIPod: across rails only over NVLink",
         pxn_on_hpn7,
         "TODO 3: the relay is the GPU of the source's server whose rail is the destination's"),
    Step("hidden shapes: other server and GPU counts, shuffled ranks, odd sizes",
         hidden_shapes,
         "nothing may depend on 2 GPUs per server or on rank order; with G = 1 or M = 1 some "
         "phases have no step"),
    Step("your hierarchical all-reduce vs the ring on a real HPN 7.0 segment (short real run)",
         live_segment,
         "the steps above must pass; `sudo fabric-lab perf all_reduce --fabric hpn7 --algo "
         "hierarchical` runs the library's version", after_all=True),
]
