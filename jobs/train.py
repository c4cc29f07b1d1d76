"""A training job's iterations on a running fabric: modelled compute, real collectives.

Each iteration runs the job's collectives (`Workload.collectives`) for real over the fabric
(`Runner.run_groups`: the collective runtime, `jobs.ccl`, on the job's GPUs) and lays them on a
time line around the modelled compute (`jobs.iteration`). Every collective of a kind runs on
all its rank groups at once (the job's data-parallel groups allreduce together, each group its
own communicator).

Scaling. The emulated NIC link stands for the modelled one (`jobs.scale.Scale`, factor k, e.g.
10 Mb/s for 400 Gb/s). A job's gigabytes cannot cross 10 Mb/s links in useful time, so bytes
are scaled too: the emulation moves modelled bytes / b with b = k / `time_scale`. Then the
emulated communication takes `time_scale` x its modelled time, and the modelled compute is
stretched by the same `time_scale`, so compute and communication keep the real job's ratio.
With `time_scale` 1 the emulated iteration lasts as long as the real one. Reports are in the
modelled job's units: seconds = emulated seconds / time_scale, bandwidths = emulated x k.
What does not scale: a message's fixed cost (the emulation's alpha, `jobs.ccl.timing`) grows
relative to the transfers as bytes shrink, so small collectives come out slower than a real
fabric's (docs/jobs/train.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from jobs.ccl.collectives import busbw_factor, get
from jobs.gpus import Cluster, Gpu, Server
from jobs.iteration import Iteration, Timed, iteration
from jobs.progress import (
    CollectiveDone,
    CollectiveStarted,
    IterationDone,
    JobDone,
    JobStarted,
    OnEvent,
    StepDone,
)
from jobs.scale import Scale
from jobs.slowest import DirectedLink, FlowTime, Verdict, blame
from jobs.workload import Collective, Workload


@dataclass
class GroupRun:
    """One collective run on every group at once, as the runtime ran it: emulated seconds from
    its launch, ranks as the job's (indices into its GPUs)."""

    time_s: float  # to the last rank done
    rank_end_s: list[float]  # per rank, its last op done
    complete: bool
    wrong: int  # output elements not as the collective promises (checked runs)
    retransmits: int  # fabric packets sent again
    phases: list[str]  # per step of the schedule (group 0's)
    step_bytes: list[list[int]]  # per step, per rank: bytes received
    step_end_s: list[list[float]]  # per step, per rank: its last receive of the step done
    flows: list[tuple[int, int, int, int, float]]  # fabric messages: src, dst, step, bytes, s


class Runner(Protocol):
    """What runs the job's collectives: `jobs.train_fabric.JobComm`."""

    def run_groups(self, kind: str, algorithm: str, groups: Sequence[Sequence[int]],
                   size: int) -> GroupRun: ...


@dataclass(frozen=True)
class JobScale:
    """Modelled job -> emulation: the link factor k and the time stretch (module docstring)."""

    rate: Scale
    time_scale: float = 1.0  # emulated seconds per modelled second

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError(f"time scale must be > 0, got {self.time_scale}")

    @property
    def bytes_factor(self) -> float:
        """Modelled bytes per emulated byte."""
        return self.rate.factor / self.time_scale

    def emulated_bytes(self, modelled: int, multiple: int = 4) -> int:
        """Bytes the emulation moves for `modelled` bytes, a whole number of `multiple`s."""
        raw = modelled / self.bytes_factor
        return max(multiple, math.ceil(raw / multiple) * multiple)

    def modelled_s(self, emulated_s: float) -> float:
        return emulated_s / self.time_scale

    def emulated_s(self, modelled_s: float) -> float:
        return modelled_s * self.time_scale


@dataclass
class TrainOptions:
    all_reduce: str = "auto"  # ring, hd, hierarchical; auto: hierarchical on multi-GPU servers
    alltoall: str = "auto"  # flat, pxn; auto: pxn on multi-GPU servers
    time_scale: float = 1.0
    iterations: int | None = None  # overrides the job's
    warmup: bool = True  # one small untimed run of each kind of collective first


@dataclass
class CollectiveRun:
    """One collective of one iteration, in modelled units unless named `emulated`."""

    iteration: int
    purpose: str
    kind: str
    algorithm: str
    groups: int
    group_ranks: int
    bytes: int  # modelled, per rank (nccl-tests' S)
    emulated_bytes: int
    emulated_s: float
    time_s: float
    algbw_gbs: float
    busbw_gbs: float
    complete: bool
    wrong: int
    lost_packets: int
    rank_end_s: list[float]  # per rank, when its last op was done (modelled s)
    flows: list[FlowTime] = field(default_factory=list, repr=False)


@dataclass
class IterationRun:
    index: int
    timeline: Iteration
    collectives: list[CollectiveRun]
    # each rank's own iteration: its time line with its own finishing time in every step, as
    # if it never waited for a later rank's step (the collective's time is every step's latest)
    rank_s: list[float]

    @property
    def slowest_rank(self) -> int:
        return max(range(len(self.rank_s)), key=lambda r: self.rank_s[r])


@dataclass
class TrainResult:
    job: Workload
    ranks: list[Gpu]
    scale: JobScale
    iterations: list[IterationRun] = field(default_factory=list)
    verdict: Verdict | None = None

    def mean(self, what: Callable[[IterationRun], float]) -> float:
        return statistics.fmean(what(it) for it in self.iterations) if self.iterations else 0.0

    def rank_s(self) -> list[float]:
        """Mean iteration time per rank."""
        return [statistics.fmean(it.rank_s[r] for it in self.iterations)
                for r in range(len(self.ranks))] if self.iterations else []


def job_ranks(job: Workload, cluster: Cluster,
              order: Callable[[Cluster], list[Gpu]]) -> tuple[Cluster, list[Gpu]]:
    """The job's part of the cluster (its first `servers` servers, their first
    `gpus_per_server` GPUs) and the rank order `order` gives on it."""
    short = [s.name for s in cluster.servers[:job.servers] if len(s.gpus) < job.gpus_per_server]
    problems = []
    if len(cluster.servers) < job.servers:
        problems.append(f"the job needs {job.servers} servers, the fabric has "
                        f"{len(cluster.servers)}")
    if short:
        problems.append(f"the job needs {job.gpus_per_server} GPUs (NICs) per server; "
                        f"{', '.join(short)} have fewer")
    if problems:
        raise ValueError(f"job {job.name!r} does not fit: {'; '.join(problems)} "
                         f"(a larger fabric: --scale)")
    part = Cluster([Server(s.name, s.gpus[:job.gpus_per_server], s.group)
                    for s in cluster.servers[:job.servers]], cluster.link_bps,
                   cluster.nvlink_ratio)
    return part, order(part)


def algorithm(kind: str, options: TrainOptions, gpus: Sequence[Gpu]) -> str:
    """The algorithm for one kind of collective on one group's GPUs."""
    multi = len({g.server for g in gpus}) < len(gpus)  # some server holds two of them
    coll = get(kind)
    if kind == "all_reduce":
        choice = options.all_reduce
        if choice == "auto":
            return "hierarchical" if multi else "ring"
    elif kind == "alltoall":
        choice = options.alltoall
        if choice == "auto":
            return "pxn" if multi else "flat"
    else:
        return coll.default_algorithm
    return coll.algorithm(choice)


def run_collective(runner: Runner, c: Collective, ranks: Sequence[Gpu], options: TrainOptions,
                   scale: JobScale, index: int, on_event: OnEvent | None = None) -> CollectiveRun:
    group_gpus = [ranks[r] for r in c.groups[0]]
    algo = algorithm(c.kind, options, group_gpus)
    n = len(c.groups[0])
    size = scale.emulated_bytes(c.bytes, multiple=4 * n * n)
    result = runner.run_groups(c.kind, algo, c.groups, size)
    emulated_s = result.time_s
    time_s = scale.modelled_s(emulated_s)
    algbw = c.bytes / time_s / 1e9 if time_s > 0 else 0.0
    if on_event is not None:  # the steps as they went (the runtime reports them at the end)
        on_event(CollectiveStarted(
            index, c.purpose, c.kind, algo, c.bytes, size, tuple(result.phases),
            tuple(sum(step[r] for step in result.step_bytes) for r in range(len(ranks))),
            tuple(sum(1 for step in result.step_bytes if step[r]) for r in range(len(ranks)))))
        for i, phase in enumerate(result.phases):
            ends = result.step_end_s[i]
            on_event(StepDone(index, c.purpose, i, phase, scale.modelled_s(max(ends)),
                              result.complete, tuple(result.step_bytes[i]),
                              tuple(scale.modelled_s(t) for t in ends)))
        on_event(CollectiveDone(index, c.purpose, time_s, algbw * busbw_factor(c.kind, n),
                                result.complete, result.wrong))
    flows = [FlowTime(c.purpose, step, src, dst, nbytes, duration)
             for src, dst, step, nbytes, duration in result.flows]
    return CollectiveRun(
        iteration=index, purpose=c.purpose, kind=c.kind, algorithm=algo, groups=len(c.groups),
        group_ranks=n, bytes=c.bytes, emulated_bytes=size, emulated_s=emulated_s,
        time_s=time_s, algbw_gbs=algbw, busbw_gbs=algbw * busbw_factor(c.kind, n),
        complete=result.complete, wrong=result.wrong, lost_packets=result.retransmits,
        rank_end_s=[scale.modelled_s(t) for t in result.rank_end_s], flows=flows)


def lay_out(job: Workload, index: int, runs: list[CollectiveRun], ranks: int) -> IterationRun:
    """The iteration's time line, and each rank's with its own finishing times."""
    calls = job.collectives()

    def timed(durations: Sequence[float]) -> list[Timed]:
        return [Timed(c.purpose, t, c.release, c.overlappable)
                for c, t in zip(calls, durations, strict=True)]

    whole = iteration(job.compute_s, timed([r.time_s for r in runs]))
    per_rank = [iteration(job.compute_s, timed([r.rank_end_s[k] for r in runs])).total_s
                for k in range(ranks)]
    return IterationRun(index, whole, runs, per_rank)


def train(runner: Runner, job: Workload, ranks: Sequence[Gpu], scale: JobScale,
          options: TrainOptions | None = None,
          links_of: Callable[[int, int], set[DirectedLink]] | None = None,
          counters: Callable[[], dict[DirectedLink, int]] | None = None,
          progress: Callable[[str], None] = print,
          on_event: OnEvent | None = None,
          on_iteration: Callable[[TrainResult, IterationRun], None] | None = None
          ) -> TrainResult:
    """Run the job's iterations; with `links_of` (rank pair -> links every path crosses), name
    the link the slowest ranks waited on, with `counters` (tx packets per link) as evidence;
    `on_event` hears how the job goes (`jobs.progress`); `on_iteration` gets each iteration as
    it is measured (already in the result: what was measured stays there if the run stops)."""
    options = options or TrainOptions()
    if len(ranks) != job.ranks:
        raise ValueError(f"job {job.name!r} has {job.ranks} ranks, got {len(ranks)} GPUs")
    result = TrainResult(job, list(ranks), scale)
    iterations = options.iterations or job.iterations
    if on_event is not None:
        on_event(JobStarted(job.name, iterations, tuple(g.nic for g in ranks)))
    if options.warmup:  # one small run of every kind of collective first
        for c in {c.kind: c for c in job.collectives()}.values():
            n = len(c.groups[0])
            runner.run_groups(c.kind, algorithm(c.kind, options, [ranks[r] for r in c.groups[0]]),
                              c.groups, 1024 * n * n)
    before = counters() if counters else None
    for i in range(iterations):
        runs = []
        for c in job.collectives():
            runs.append(run_collective(runner, c, ranks, options, scale, i, on_event))
            progress(f"iteration {i}: {c.purpose} {runs[-1].algorithm} "
                     f"{runs[-1].time_s * 1e3:.1f} ms, busbw {runs[-1].busbw_gbs:.1f} GB/s")
        it = lay_out(job, i, runs, len(ranks))
        result.iterations.append(it)
        if on_iteration is not None:
            on_iteration(result, it)
        progress(f"iteration {i}: {it.timeline.total_s:.3f} s (compute {it.timeline.compute_s:.3f}"
                 f" s, exposed communication {it.timeline.exposed_s:.3f} s)")
        if on_event is not None:
            on_event(IterationDone(i, it.timeline.total_s, it.timeline.compute_s,
                                   it.timeline.exposed_s, it.slowest_rank,
                                   ranks[it.slowest_rank].nic, tuple(it.rank_s)))
    if links_of is not None:
        packets = None
        if counters is not None and before is not None:
            after = counters()
            packets = {ln: after.get(ln, 0) - before.get(ln, 0) for ln in after}
        flows = [f for it in result.iterations for c in it.collectives for f in c.flows]
        result.verdict = blame(flows, links_of, packets)
    if on_event is not None:
        on_event(JobDone(job.name, len(result.iterations)))
    return result


# ---- results as rows (CSV) and a record (JSON) --------------------------------------------
ITERATION_FIELDS = ["iteration", "iteration_s", "compute_s", "exposed_s", "communication_s",
                    "hidden_s", "slowest_rank", "slowest_nic", "slowest_rank_s",
                    "fastest_rank_s"]
COLLECTIVE_FIELDS = ["iteration", "purpose", "kind", "algorithm", "groups", "group_ranks",
                     "bytes", "emulated_bytes", "time_s", "emulated_s", "algbw_gbs",
                     "busbw_gbs", "complete", "wrong", "lost_packets"]
RANK_FIELDS = ["rank", "server", "gpu", "nic", "own_iteration_s", "behind_fastest_s"]


def iteration_row(result: TrainResult, it: IterationRun) -> dict[str, Any]:
    t = it.timeline
    slow = it.slowest_rank
    return {"iteration": it.index, "iteration_s": round(t.total_s, 6),
            "compute_s": round(t.compute_s, 6), "exposed_s": round(t.exposed_s, 6),
            "communication_s": round(t.communication_s, 6),
            "hidden_s": round(t.hidden_s, 6), "slowest_rank": slow,
            "slowest_nic": result.ranks[slow].nic,
            "slowest_rank_s": round(it.rank_s[slow], 6),
            "fastest_rank_s": round(min(it.rank_s), 6)}


def iteration_rows(result: TrainResult) -> list[dict[str, Any]]:
    return [iteration_row(result, it) for it in result.iterations]


def iteration_collective_rows(it: IterationRun) -> list[dict[str, Any]]:
    """The collectives of one iteration as rows."""
    return [{k: (round(v, 6) if isinstance(v, float) else v)
             for k, v in vars(c).items() if k in COLLECTIVE_FIELDS}
            for c in it.collectives]


def collective_rows(result: TrainResult) -> list[dict[str, Any]]:
    return [row for it in result.iterations for row in iteration_collective_rows(it)]


def rank_rows(result: TrainResult) -> list[dict[str, Any]]:
    means = result.rank_s()
    if not means:  # no iteration measured (interrupted in the first)
        return []
    fastest = min(means)
    return [{"rank": r, "server": g.server, "gpu": g.index, "nic": g.nic,
             "own_iteration_s": round(means[r], 6),
             "behind_fastest_s": round(means[r] - fastest, 6)}
            for r, g in enumerate(result.ranks)]


def summary(result: TrainResult) -> dict[str, Any]:
    """The whole run as one JSON-able record."""
    verdict = result.verdict
    means = result.rank_s()
    slow = max(range(len(means)), key=lambda r: means[r]) if means else None
    return {
        "job": result.job.name, "ranks": result.job.ranks,
        "scale": {"emulated_bps": result.scale.rate.emulated_bps,
                  "modelled_bps": result.scale.rate.modelled_bps,
                  "factor": result.scale.rate.factor, "time_scale": result.scale.time_scale,
                  "bytes_factor": result.scale.bytes_factor},
        "iteration_s": result.mean(lambda it: it.timeline.total_s),
        "compute_s": result.job.compute_s,
        "exposed_s": result.mean(lambda it: it.timeline.exposed_s),
        "slowest_rank": slow, "slowest_nic": result.ranks[slow].nic if slow is not None else None,
        "waited_on": list(verdict.link) if verdict and verdict.link else None,
        "why": verdict.describe(lambda r: result.ranks[r].nic) if verdict else None,
        "iterations": iteration_rows(result), "collectives": collective_rows(result),
        "ranks_detail": rank_rows(result),
    }
