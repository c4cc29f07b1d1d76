"""A SimAI workload trained on a running fabric, layer by layer (`fabric-lab train FILE.txt`).

    result = train_layers(fabric, read("gpt13b.txt"), LayerOptions(iterations=2))
    result.iterations[0].iteration_s, result.groups["dp"].exposed_s, result.spans

The workload is fitted to the fabric's GPUs by its stated rule (`SimaiWorkload.fit`, said in
`notes`), its ranks placed in the fabric's rank order (Megatron's: tensor-parallel ranks
adjacent, so inside a server), its iteration built as one program per rank
(`jobs.timeline`) and run `iterations` times back to back with one launch; every task's
start and end on every rank is read back (`Program.spans`) and reported in the modelled
job's seconds (emulated / time_scale).

Who held the job up, told apart as Baidu's slow-node search does: a slow GPU is a rank whose
compute took `SLOW_GPU` (20 %) longer than the median rank's (its peers' idle time is what it
cost them); a slow link is the one `jobs.slowest.blame` names from the fabric messages' own
times (late messages across it, the switches' port counters as evidence). A slow GPU makes no
message late (its sends are posted late, then cross at the fabric's pace), and a slow link
lengthens no compute, so each names its own cause.

What the report says, per iteration: its time (the last rank's optimizer step done, from the
first rank's start), each rank's compute, and its exposed communication: the time its GPU was
idle, each gap charged to the communicator of the collective it was waiting for (the one whose
end on that rank came last before the gap closed; a pipeline receive is `pp`, which holds the
bubble). Per communicator: its collectives' count, bytes, median time and bus bandwidth
(nccl-tests' busbw of each collective: modelled bytes / time x the collective's factor).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobs.ccl.collectives import busbw_factor
from jobs.ccl.plan import Member
from jobs.ccl.program import Span
from jobs.simai import SimaiWorkload
from jobs.slowest import DirectedLink, FlowTime, Verdict, blame
from jobs.timeline import JobProgram, TimelineOptions, build
from jobs.train import JobScale

PP = "pp"
SLOW_GPU = 0.2  # a rank whose compute exceeds the median rank's by this share is a slow GPU


@dataclass(frozen=True)
class LayerOptions:
    iterations: int = 2
    time_scale: float = 1.0
    buckets: int = 4
    all_reduce: str = "ring"
    alltoall: str = "flat"
    timeout_s: float = 600.0
    slow: dict[int, float] = field(default_factory=dict)  # rank -> its compute x this
    jitter: float = 0.0


@dataclass
class RankIteration:
    rank: int
    time_s: float  # from the iteration's start to this rank's last task done
    compute_s: float
    idle_by: dict[str, float] = field(default_factory=dict)  # communicator -> idle seconds

    @property
    def exposed_s(self) -> float:
        return sum(self.idle_by.values())


@dataclass
class IterationSummary:
    index: int
    iteration_s: float
    ranks: list[RankIteration]

    @property
    def compute_s(self) -> float:
        return statistics.fmean(r.compute_s for r in self.ranks)

    @property
    def exposed_s(self) -> float:
        return statistics.fmean(r.exposed_s for r in self.ranks)

    @property
    def slowest(self) -> RankIteration:
        return max(self.ranks, key=lambda r: r.time_s)


@dataclass
class GroupSummary:
    comm: str
    collectives: int
    bytes: int  # modelled, per rank, summed over the collectives of one iteration
    median_s: float
    busbw_gbs: float  # median over the collectives
    exposed_s: float  # mean over ranks and iterations


@dataclass
class LayeredResult:
    workload: SimaiWorkload
    notes: list[str]
    scale: JobScale
    spans: list[Span]  # modelled seconds
    iterations: list[IterationSummary]
    groups: dict[str, GroupSummary]
    complete: bool
    errors: list[str]
    slow_gpus: list[tuple[int, float]] = field(default_factory=list)  # rank, compute / median
    link: Verdict | None = None


def _comm_group(comm: str) -> str:
    return PP if comm.startswith("pp ") else comm


def summarise(job: JobProgram, spans: Sequence[Span], iterations: int,
              ranks: Sequence[int]) -> tuple[list[IterationSummary], dict[str, GroupSummary]]:
    """The iterations and communicators of a run's spans (module docstring)."""
    by_it: dict[int, list[Span]] = defaultdict(list)
    for s in spans:
        by_it[s.iteration].append(s)
    summaries = []
    idle_total: dict[str, list[float]] = defaultdict(list)
    for it in range(iterations):
        mine = by_it.get(it, [])
        if not mine:
            continue
        start = min(s.start_s for s in mine)
        rank_rows = []
        for r in ranks:
            spans_r = sorted((s for s in mine if s.rank == r), key=lambda s: s.start_s)
            compute = [s for s in spans_r if s.task.kind == "compute" and s.duration_s > 0]
            comms = [s for s in spans_r if s.task.comm is not None]
            idle: dict[str, float] = defaultdict(float)
            t = start
            for c in compute:
                gap = c.start_s - t
                if gap > 0:
                    waited = [s for s in comms if s.end_s <= c.start_s + 1e-6]
                    cause = _comm_group(max(waited, key=lambda s: s.end_s).task.comm or "") \
                        if waited else "start"
                    idle[cause] += gap
                t = max(t, c.end_s)
            end = max((s.end_s for s in spans_r), default=start)
            rank_rows.append(RankIteration(r, end - start, sum(c.duration_s for c in compute),
                                           dict(idle)))
            for comm, seconds in idle.items():
                idle_total[comm].append(seconds)
        summaries.append(IterationSummary(it, max(x.time_s for x in rank_rows), rank_rows))
    groups: dict[str, GroupSummary] = {}
    runs: dict[tuple[int, int], list[Span]] = defaultdict(list)  # (task, iteration) -> spans
    for s in spans:
        if s.task.comm is not None:
            runs[(id(s.task), s.iteration)].append(s)
    per_comm: dict[str, list[tuple[float, Span]]] = defaultdict(list)
    for ss in runs.values():  # a collective's time: its first rank's start to its last's end
        took = max(s.end_s for s in ss) - min(s.start_s for s in ss)
        per_comm[_comm_group(ss[0].task.comm or "")].append((took, ss[0]))
    count = max(1, len(summaries))
    for comm, timed in sorted(per_comm.items()):
        n = group_size(job.workload, comm)
        times = [t for t, _ in timed if t > 0]
        bws = [s.task.nbytes * job.scale.bytes_factor / t / 1e9 * busbw_factor(s.task.kind, n)
               for t, s in timed if t > 0]
        samples = idle_total.get(comm, [])
        groups[comm] = GroupSummary(
            comm, len(timed) // count,
            round(sum(s.task.nbytes for _, s in timed) * job.scale.bytes_factor / count),
            statistics.median(times) if times else 0.0,
            statistics.median(bws) if bws else 0.0,
            sum(samples) / (count * len(ranks)) if samples else 0.0)
    return summaries, groups


def group_size(w: SimaiWorkload, comm: str) -> int:
    """The ranks in one group of communicator `comm`."""
    return {"tp": w.tp, "dp": w.dp, "ep": w.ep, "dp_ep": w.dp // w.ep, PP: 2}.get(comm, 1)


def slow_gpus(iterations: Sequence[IterationSummary]) -> list[tuple[int, float]]:
    """(rank, its compute / the median rank's) of every rank SLOW_GPU slower, slowest first."""
    per_rank: dict[int, list[float]] = defaultdict(list)
    for it in iterations:
        for r in it.ranks:
            per_rank[r.rank].append(r.compute_s)
    means = {r: statistics.fmean(v) for r, v in per_rank.items()}
    if not means:
        return []
    median = statistics.median(means.values())
    slow = [(r, m / median) for r, m in means.items() if median > 0 and m > (1 + SLOW_GPU) * median]
    return sorted(slow, key=lambda x: -x[1])


def train_layers(members: Callable[[int], Sequence[Member]],
                 run: Callable[[Any, int, float], Any], workload: SimaiWorkload,
                 scale: JobScale, options: LayerOptions, ranks_available: int,
                 progress: Callable[[str], None] = print, channels: int = 1,
                 links_of: Callable[[int, int], set[DirectedLink]] | None = None,
                 counters: Callable[[], dict[DirectedLink, int]] | None = None) -> LayeredResult:
    """Fit, build, run and read back (module docstring). `members(n)` gives the fabric's
    first n ranks in rank order as plan members; `run(compiled, iterations, timeout_s)` runs
    a compiled program with records and returns its RunResult; `links_of(src, dst)` (job
    ranks) the links a message crosses and `counters()` the switches' transmit counters, for
    naming a slow link."""
    fitted, notes = workload.fit(ranks_available)
    for note in notes:
        progress(f"  {note}")
    ms = list(members(fitted.all_gpus))

    def algorithm(kind: str, group: Sequence[Member]) -> str:
        return {"all_reduce": options.all_reduce, "alltoall": options.alltoall,
                "broadcast": "chain"}.get(kind, "ring")

    job = build(fitted, ms, scale, algorithm,
                TimelineOptions(buckets=options.buckets, channels=channels, slow=options.slow,
                                jitter=options.jitter))
    before = counters() if counters else None
    result = run(job.program.build(), options.iterations, options.timeout_s)
    to_job = {m.rank: k for k, m in enumerate(ms)}  # engine rank -> the workload's rank
    spans = [Span(s.task, to_job[s.rank], s.iteration, scale.modelled_s(s.start_s),
                  scale.modelled_s(s.end_s)) for s in job.program.spans(result)]
    iterations, groups = summarise(job, spans, options.iterations, range(len(ms)))
    verdict = None
    if links_of is not None:
        flows = [FlowTime(f"{m.task.name} #{m.iteration}", m.step, to_job[m.src], to_job[m.dst],
                          m.nbytes, m.end_s - m.start_s)
                 for m in job.program.messages(result) if m.fabric]
        packets = None
        if counters is not None and before is not None:
            after = counters()
            packets = {ln: after.get(ln, 0) - before.get(ln, 0) for ln in after}
        verdict = blame(flows, links_of, packets)
    return LayeredResult(fitted, notes, scale, spans, iterations, groups, result.complete,
                         result.errors(), slow_gpus(iterations), verdict)
