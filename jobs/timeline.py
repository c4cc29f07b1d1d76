"""A SimAI workload's iteration as one program per rank (jobs/ccl/program.py): every rank walks
its layers as Megatron-LM runs them, and all groups' traffic is on the fabric at once.

Per microbatch, the forward pass runs the layers in file order (compute, then the layer's
forward collective on its group, which the next layer waits for), the backward pass in
reverse (input-gradient compute and collective, then weight-gradient compute and collective).
Tensor- and expert-parallel collectives block the compute that follows (they are on its
critical path); the data-parallel weight-gradient collectives are issued in the last
microbatch only (gradients accumulate over the others), gathered into `buckets` of about equal
bytes in the order the backward pass produces them, each issued as soon as its last layer's
gradient is computed, and nothing waits for them but the optimizer step (the layers' update
times) at the end of the iteration: they overlap the rest of the backward pass, as DDP's
buckets do.

Pipeline parallelism (PP > 1) runs 1F1B: stage s does min(PP - s - 1, GA) forward passes,
then alternates one forward and one backward, then the remaining backward passes; a forward
pass at stage s > 0 waits for the activations of stage s - 1 (`pp_comm` bytes, one
point-to-point send per tensor-/data-parallel position), a backward pass at stage s < PP - 1 for
the gradients of stage s + 1. The idle time this leaves is the pipeline bubble,
(PP - 1) / (GA + PP - 1) of a stage's time when the stages are equal.

Sizes and times are the modelled job's, scaled as `jobs.train` scales them (`JobScale`):
bytes / bytes_factor on the emulated links, compute x time_scale. A slow GPU (`slow`: a rank's
compute x a factor) and per-stretch variance (`jitter`) are the compute's, never the fabric's.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from jobs.ccl.plan import Compiled, Member, compile_collective, merge
from jobs.ccl.program import Program, Task
from jobs.simai import Phase, SimaiWorkload
from jobs.train import JobScale

Algorithms = Callable[[str, Sequence[Member]], str]  # (collective, a group's members) -> name


@dataclass(frozen=True)
class TimelineOptions:
    buckets: int = 4  # data-parallel weight-gradient collectives per iteration and kind
    channels: int = 1
    dtype_bytes: int = 4  # the runtime's float
    slow: Mapping[int, float] = field(default_factory=dict)  # rank -> its compute x this
    jitter: float = 0.0  # each compute stretch x (1 + N(0, jitter)), at least x 0.5
    seed: int = 0


@dataclass
class JobProgram:
    """The program and what it issued, for reading its spans back."""

    program: Program
    workload: SimaiWorkload
    scale: JobScale
    stage_of: dict[int, int] = field(default_factory=dict)  # rank -> pipeline stage
    bucket_layers: list[list[str]] = field(default_factory=list)


Grads = dict[str, list[tuple[int, str]]]  # "group:collective" -> (bytes, layer) not yet sent


class _Builder:
    def __init__(self, w: SimaiWorkload, members: Sequence[Member], scale: JobScale,
                 options: TimelineOptions, algorithms: Algorithms) -> None:
        if len(members) != w.all_gpus:
            raise ValueError(f"the workload runs on {w.all_gpus} GPUs; {len(members)} given")
        self.w, self.scale, self.options, self.algorithms = w, scale, options, algorithms
        self.members = list(members)
        self.program = Program(self.members)
        self.total = max(m.rank for m in self.members) + 1
        self.last: dict[int, int] = {}  # rank -> its stream's last op (what the next waits for)
        self.job = JobProgram(self.program, w, scale)
        self.stage_ranks = [[w.rank(s, d, t) for d in range(w.dp) for t in range(w.tp)]
                            for s in range(w.pp)]
        for stage, ranks in enumerate(self.stage_ranks):
            self.job.stage_of.update(dict.fromkeys(ranks, stage))
        self.passed: dict[tuple[str, int, int], dict[int, int]] = {}  # (pass, stage, mb) -> ends
        self.bucket_total: dict[str, int] = defaultdict(int)  # a stage's bytes per bucket kind
        for layer in w.layers:
            p = layer.weight_grad
            if p.collective and p.group in ("dp", "dp_ep"):
                self.bucket_total[f"{p.group}:{p.collective}"] += p.bytes
        self.grads: list[Grads] = [defaultdict(list) for _ in range(w.pp)]
        self.random = random.Random(options.seed)
        bad = sorted(r for r in options.slow if not 0 <= r < w.all_gpus)
        if bad:
            raise ValueError(f"--slow-gpu names rank(s) {bad}: the job has ranks 0-{w.all_gpus - 1}")
        self.sent: list[list[int]] = [[] for _ in range(self.total)]  # rank -> bucket markers

    # -- the streams -------------------------------------------------------------------------
    def compute(self, rank: int, ns: int, name: str, extra: Sequence[int] = ()) -> None:
        after = [self.last[rank]] if rank in self.last else []
        factor = self.options.slow.get(rank, 1.0)
        if self.options.jitter and ns:
            factor *= max(0.5, 1 + self.random.gauss(0, self.options.jitter))
        emulated = round(self.scale.emulated_s(ns * factor * 1e-9) * 1e9)
        self.last[rank] = self.program.compute(rank, emulated, name, after + list(extra)).done[rank]

    def collective(self, comm: str, kind: str, groups: Sequence[Sequence[int]], nbytes: int,
                   name: str, blocking: bool,
                   gate: dict[int, list[int]] | None = None) -> Task | None:
        groups = [g for g in groups if len(g) > 1]
        if not groups or nbytes <= 0:
            return None
        n = len(groups[0])
        unit = self.options.dtype_bytes
        size = self.scale.emulated_bytes(nbytes, multiple=unit * n * n)
        parts: list[Compiled] = []
        for g in groups:
            ms = [self.members[r] for r in g]
            parts.append(compile_collective(
                kind, self.algorithms(kind, ms), ms, total_ranks=self.total, count=size // unit,
                dtype=self.program.dtype, redop=0, root=0, channels=self.options.channels))
        ranks = [r for g in groups for r in g]
        after = gate if gate is not None else {r: [self.last[r]] for r in ranks if r in self.last}
        task = self.program.collective(comm, merge(parts), name, after=after)
        if blocking:
            for r in ranks:
                self.last[r] = task.done[r]
        return task

    # -- a pass ------------------------------------------------------------------------------
    def phase(self, stage: int, layer: str, what: str, p: Phase, mb: int) -> None:
        ranks = self.stage_ranks[stage]
        for r in ranks:
            self.compute(r, p.compute_ns, f"{what} {layer} mb{mb}")
        if not p.collective or p.group is None:
            return
        if p.group in ("dp", "dp_ep") and what == "weight-grad":
            if mb == self.w.ga - 1:  # the last microbatch's gradients leave, bucket by bucket
                self.grads[stage][f"{p.group}:{p.collective}"].append((p.bytes, layer))
                self.flush(stage, final=False)
            return
        groups = [g for g in self.w.groups(p.group) if set(g) <= set(ranks)]
        self.collective(p.group, p.collective, groups, p.bytes,
                        f"{p.group} {p.collective} {what} {layer} mb{mb}", blocking=True)

    def flush(self, stage: int, final: bool) -> None:
        """Issue the stage's buckets that are full (at the end: whatever is left)."""
        ranks = self.stage_ranks[stage]
        for key, pending in self.grads[stage].items():
            group, kind = key.split(":")
            limit = max(1, -(-self.bucket_total[key] // self.options.buckets))
            while pending and (final or sum(b for b, _ in pending) >= limit):
                taken, size = [], 0
                while pending and size < limit:
                    nbytes, layer = pending.pop(0)
                    taken.append(layer)
                    size += nbytes
                groups = [g for g in self.w.groups(group) if set(g) <= set(ranks)]
                name = f"{group} {kind} bucket {len(self.job.bucket_layers)}"
                task = self.collective(group, kind, groups, size, name, blocking=False)
                if task is not None:
                    self.job.bucket_layers.append(taken)
                    for r, op in task.done.items():
                        self.sent[r].append(op)

    def run_pass(self, kind: str, stage: int, mb: int) -> None:
        w = self.w
        if kind == "forward":
            if stage > 0:
                self.p2p("forward", stage - 1, stage, mb)
            for layer in w.layers:
                self.phase(stage, layer.name, "forward", layer.forward, mb)
        else:
            if stage < w.pp - 1:
                self.p2p("backward", stage + 1, stage, mb)
            for layer in reversed(w.layers):
                self.phase(stage, layer.name, "input-grad", layer.input_grad, mb)
                self.phase(stage, layer.name, "weight-grad", layer.weight_grad, mb)
        self.passed[(kind, stage, mb)] = {r: self.last[r] for r in self.stage_ranks[stage]}

    def p2p(self, kind: str, src: int, dst: int, mb: int) -> None:
        """Stage `src`'s `kind` pass of microbatch `mb` hands stage `dst` its `pp_comm` bytes
        (activations forward, gradients backward), one send per tensor-/data-parallel
        position once the source's pass is done; the destination's next compute waits."""
        w = self.w
        pairs = [(w.rank(src, d, t), w.rank(dst, d, t)) for d in range(w.dp) for t in range(w.tp)]
        unit = self.options.dtype_bytes
        size = self.scale.emulated_bytes(w.pp_comm_bytes, multiple=unit)
        parts = [compile_collective("broadcast", "chain", [self.members[a], self.members[b]],
                                    total_ranks=self.total, count=size // unit,
                                    dtype=self.program.dtype, root=0) for a, b in pairs]
        comm = f"pp {kind} {min(src, dst)}-{max(src, dst)}"
        ends = self.passed[(kind, src, mb)]
        task = self.program.collective(comm, merge(parts), f"{comm} mb{mb}",
                                       after={a: [ends[a]] for a, _ in pairs})
        for _, b in pairs:
            after = [task.done[b]] + ([self.last[b]] if b in self.last else [])
            self.last[b] = self.program.compute(b, 0, f"{comm} mb{mb} received", after).done[b]

    # -- the iteration -----------------------------------------------------------------------
    def schedule(self, stage: int) -> list[tuple[str, int]]:
        """1F1B: warm-up forwards, then one forward and one backward, then the rest."""
        p, m = self.w.pp, self.w.ga
        warm = min(p - stage - 1, m)
        order = [("forward", j) for j in range(warm)]
        for j in range(m - warm):
            order += [("forward", warm + j), ("backward", j)]
        return order + [("backward", j) for j in range(m - warm, m)]

    def build(self) -> JobProgram:
        """Every stage's passes, each once what it receives is built (a topological order of
        the 1F1B schedule), then each stage's last buckets and its optimizer step."""
        w = self.w
        orders = [self.schedule(s) for s in range(w.pp)]
        at = [0] * w.pp
        while any(at[s] < len(orders[s]) for s in range(w.pp)):
            progressed = False
            for s in range(w.pp):
                while at[s] < len(orders[s]):
                    kind, mb = orders[s][at[s]]
                    source = s - 1 if kind == "forward" else s + 1
                    if 0 <= source < w.pp and (kind, source, mb) not in self.passed:
                        break
                    self.run_pass(kind, s, mb)
                    at[s] += 1
                    progressed = True
            if not progressed:
                raise RuntimeError("the pipeline schedule cannot proceed (a defect)")
        update = sum(layer.update_ns for layer in w.layers)
        for s in range(w.pp):
            self.flush(s, final=True)
            for r in self.stage_ranks[s]:  # the optimizer step: after the rank's buckets
                self.compute(r, update, "optimizer", extra=self.sent[r])
        return self.job


def build(workload: SimaiWorkload, members: Sequence[Member], scale: JobScale,
          algorithms: Algorithms, options: TimelineOptions | None = None) -> JobProgram:
    """The program of one iteration of `workload` on `members` (member i: the workload's rank
    i), scaled by `scale`."""
    return _Builder(workload, members, scale, options or TimelineOptions(), algorithms).build()
