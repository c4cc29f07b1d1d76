"""A job's iteration as one plan per rank, which the engine (jobs/ccl/c) runs as one dataflow:
collectives on their communicators and compute, each rank issuing them in its own order, as
NCCL runs kernels on streams.

    program = Program(members)
    f = program.compute(rank, 2_000_000, "forward 0")                # the GPU busy 2 ms
    tp = program.collective("tp", compiled, "tp 0", after={r: [f] for r in group})
    program.compute(rank, 2_000_000, "forward 1", after=[tp.done[rank]])  # waits: blocking
    loaded = comm.load(program.build())                              # then comm.run(loaded)

A task is done on a rank when its ops there are: a zero-length compute op marks it, so that
`after` names one op and the records give its end. The collectives of one communicator (a
group kind: every data-parallel group is one) run one after another on each rank, in the
order they were issued (one stream per communicator); those of different communicators
overlap wherever their dependencies let them, and share the NIC's ports and the fabric. Each
communicator keeps its connections (one per peer, channel and direction, with its own QPN and
so its own UDP source port) and its region of the arena for all its collectives.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from jobs.ccl import native
from jobs.ccl.collectives import Counts
from jobs.ccl.communicator import RunResult
from jobs.ccl.datatypes import NO_OP, DataType, datatype
from jobs.ccl.plan import ALIGN, MAX_CHANNELS, Compiled, Member, OpInfo, RankPlan, entropy

MAX_COMMUNICATORS = 64


def comm_qpn(comm: int, src: int, dst: int, channel: int, total: int) -> int:
    """The wire name of communicator `comm`'s connection src -> dst on `channel`."""
    value = 1 + ((comm * total + src) * total + dst) * MAX_CHANNELS + channel
    if value >= 1 << 24:
        raise ValueError(f"{comm + 1} communicators of {total} ranks need more than 24 bits "
                         f"of QPN")
    return value


@dataclass
class Task:
    """One compute stretch or one collective, as the program placed it."""

    name: str
    kind: str  # "compute" or the collective's name
    comm: str | None  # the communicator of a collective
    nbytes: int  # a collective's nccl-tests size S (emulated bytes); 0 for compute
    ops: dict[int, range] = field(default_factory=dict)  # per rank: its ops, done marker last
    done: dict[int, int] = field(default_factory=dict)  # per rank: the op that marks it done


@dataclass(frozen=True)
class Span:
    """When a task ran on one rank in one iteration: seconds from the launch (the earliest
    start of any rank), from its first op started to its marker done."""

    task: Task
    rank: int
    iteration: int
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class ProgramMessage:
    """One message of a task in one iteration (seconds from the launch): from when both ends
    were ready for it (its send posted, its receive ready) to its receiver having it all. A
    receiver still busy computing when the data came is not the fabric's delay: the message
    then counts from the receiver's readiness."""

    task: Task
    iteration: int
    src: int
    dst: int
    step: int
    nbytes: int
    fabric: bool  # False: NVLink
    start_s: float
    end_s: float


class Program:
    """Per-rank plans in the making (module docstring)."""

    def __init__(self, members: Sequence[Member], dtype: DataType | None = None) -> None:
        self.members = {m.rank: m for m in members}
        self.total = max(self.members) + 1
        self.dtype = dtype or datatype("float")
        self.redop = NO_OP
        self.plans = {r: RankPlan(r, self.dtype, NO_OP, 1) for r in self.members}
        self.tasks: list[Task] = []
        self._region: dict[int, list[str | None]] = {r: [] for r in self.members}
        self._region_bytes: dict[tuple[str, int], int] = defaultdict(int)
        self._conns: dict[tuple[int, str, int, int, int], int] = {}
        self._comms: dict[str, int] = {}
        self._last: dict[tuple[str, int], int] = {}  # (comm, rank) -> its last task's marker

    def _op(self, rank: int, op: list[int], deps: set[int], info: OpInfo,
            region: str | None) -> int:
        plan = self.plans[rank]
        plan.ops.append(op)
        plan.deps.append(deps)
        plan.info.append(info)
        self._region[rank].append(region)
        return len(plan.ops) - 1

    def _marker(self, rank: int, deps: set[int]) -> int:
        return self._op(rank, [native.COMPUTE, 0, 0, 0, 0, 0, 0, 0], deps,
                        OpInfo(native.COMPUTE, 0, -1, 0, 0), None)

    def compute(self, rank: int, ns: int, name: str, after: Sequence[int] = ()) -> Task:
        """`rank`'s GPU busy for `ns` (emulated) nanoseconds once the ops `after` are done."""
        if ns < 0:
            raise ValueError(f"{name}: a compute time cannot be negative ({ns} ns)")
        start = len(self.plans[rank].ops)
        op = self._op(rank, [native.COMPUTE, 0, 0, 0, 0, 0, ns, 0], set(after),
                      OpInfo(native.COMPUTE, 0, -1, 0, 0), None)
        task = Task(name, "compute", None, 0, {rank: range(start, op + 1)}, {rank: op})
        self.tasks.append(task)
        return task

    def collective(self, comm: str, compiled: Compiled, name: str,
                   after: Mapping[int, Sequence[int]] | None = None) -> Task:
        """`compiled` on its ranks as a task of communicator `comm`: each rank starts it once
        the ops `after[rank]` and the communicator's previous task there are done."""
        after = after or {}
        if compiled.dtype.code != self.dtype.code:
            raise ValueError(f"{name}: {compiled.dtype.name}, not the program's {self.dtype.name}")
        if compiled.redop != NO_OP:
            if self.redop not in (NO_OP, compiled.redop):
                raise ValueError(f"{name}: one program reduces with one operation")
            self.redop = compiled.redop
        index = self._comms.setdefault(comm, len(self._comms))
        if index >= MAX_COMMUNICATORS:
            raise ValueError(f"at most {MAX_COMMUNICATORS} communicators in a program")
        base = {r: len(self.plans[r].ops) for r in compiled.plans}
        task = Task(name, compiled.collective, comm, compiled.counts.param * compiled.dtype.size)
        for r, part in compiled.plans.items():
            conn = [self._conn(r, comm, index, desc) for desc in part.conns]
            gate = set(after.get(r, ()))
            if (comm, r) in self._last:
                gate.add(self._last[(comm, r)])
            used: set[int] = set()
            for i, (kind, flags, c, step, src, dst, length, match) in enumerate(part.ops):
                if kind == native.SEND:
                    match += base[part.info[i].peer]
                deps = {base[r] + d for d in part.deps[i]} or set(gate)
                used |= part.deps[i]
                self._op(r, [kind, flags, conn[c] if kind in (native.SEND, native.RECV) else 0,
                             step, src, dst, length, match], deps, replace(part.info[i]), comm)
            for k, order in part.fifo.items():
                self.plans[r].fifo.setdefault(conn[k], []).extend(base[r] + i for i in order)
            self._region_bytes[(comm, r)] = max(self._region_bytes[(comm, r)], part.arena)
            sinks = {base[r] + i for i in range(len(part.ops)) if i not in used} or gate
            marker = self._marker(r, sinks)
            task.ops[r] = range(base[r], marker + 1)
            task.done[r] = self._last[(comm, r)] = marker
        self.tasks.append(task)
        return task

    def _conn(self, rank: int, comm: str, index: int,
              desc: tuple[int, int, int, int, int, int]) -> int:
        q, peer, direction, transport, port, _ = desc
        channel = (q - 1) % MAX_CHANNELS
        key = (rank, comm, direction, peer, channel)
        if key not in self._conns:
            src, dst = (rank, peer) if direction == native.TX else (peer, rank)
            wire = comm_qpn(index, src, dst, channel, self.total)
            self._conns[key] = len(self.plans[rank].conns)
            self.plans[rank].conns.append((wire, peer, direction, transport, port,
                                           entropy(wire)))
        return self._conns[key]

    def build(self) -> Compiled:
        """Every rank's plan, its arena laid out (one region per communicator), as one
        Compiled for `Communicator.load`."""
        plans = {}
        for r, plan in self.plans.items():
            bases, offset = {}, 0
            for comm in dict.fromkeys(c for c in self._region[r] if c is not None):
                bases[comm] = offset
                offset += -(-self._region_bytes[(comm, r)] // ALIGN) * ALIGN
            ops = [list(op) for op in plan.ops]
            for op, region in zip(ops, self._region[r], strict=True):
                if region is not None:
                    op[4] += bases[region]
                    op[5] += bases[region]
            plans[r] = replace(plan, redop=self.redop, arena=max(offset, ALIGN), ops=ops,
                               deps=[set(d) for d in plan.deps],
                               fifo={k: list(v) for k, v in plan.fifo.items()})
        return Compiled("program", "", Counts(0, 0, 0), self.dtype, self.redop, False, 1,
                        0, plans, [])

    def _records(self, result: RunResult) -> tuple[int, dict[int, tuple[int, ...]]]:
        launch = min((run.start_ns for run in result.ranks.values() if run.start_ns),
                     default=0)
        return launch, {r: struct.unpack(f"{len(run.records) // 8}Q", run.records)
                        for r, run in result.ranks.items() if run.records}

    def messages(self, result: RunResult) -> list[ProgramMessage]:
        """Every message of a recorded run of `build()`, in every iteration."""
        launch, values = self._records(result)
        owner: dict[tuple[int, int], Task] = {}
        for task in self.tasks:
            for r, ops in task.ops.items():
                for i in ops:
                    owner[(r, i)] = task
        out = []
        for r, plan in self.plans.items():
            if r not in values:
                continue
            for i, info in enumerate(plan.info):
                if info.kind != native.SEND or info.peer not in values:
                    continue
                recv, n_src, n_dst = plan.ops[i][7], len(plan.ops), len(self.plans[info.peer].ops)
                for it in range(result.ranks[r].iterations):
                    post = values[r][(it * n_src + i) * 2]
                    ready, done = values[info.peer][(it * n_dst + recv) * 2:
                                                    (it * n_dst + recv) * 2 + 2]
                    if post and done:
                        start = max(post, ready)
                        out.append(ProgramMessage(owner[(r, i)], it, r, info.peer, info.step,
                                                  info.nbytes, info.transport == native.FABRIC,
                                                  (start - launch) / 1e9, (done - launch) / 1e9))
        return out

    def spans(self, result: RunResult) -> list[Span]:
        """Every task on every rank in every iteration of a recorded run of `build()`."""
        launch, records = self._records(result)
        out = []
        for r, values in records.items():
            nops = len(self.plans[r].ops)
            for it in range(result.ranks[r].iterations if nops else 0):
                at = it * nops * 2
                for task in self.tasks:
                    ops = task.ops.get(r)
                    if ops is None:
                        continue
                    starts = [v for v in values[at + 2 * ops.start:at + 2 * ops.stop:2] if v]
                    end = values[at + 2 * task.done[r] + 1]
                    if starts and end:
                        out.append(Span(task, r, it, (min(starts) - launch) / 1e9,
                                        (end - launch) / 1e9))
        return out
