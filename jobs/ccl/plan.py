"""A collective compiled into every rank's dataflow: the plan its engine runs (jobs/ccl/c).

    compiled = compile_collective("all_reduce", "ring", members, total_ranks=16, count=1 << 20,
                                  dtype=datatype("float"), redop=REDOPS["sum"])
    compiled.plans[rank].pack()   # what that rank's engine loads

Data: each chunk of the collective (`jobs.ccl.collectives`) is cut into `channels` parts,
part k moving on channel k (its own connection to every peer, on NIC port k mod ports, with
its own UDP source port: its ECMP entropy), and each part into slices of at most
`slice_bytes`, one message each. A channel runs its own copy of the schedule (ring
algorithms: its own ring, `ring` = k div ports). For every move of the schedule and every
slice, the sender gets a send op reading where it holds the slice, the receiver a receive op
writing where the slice must end (its output, or scratch if it is not a target there),
reducing with what it holds when the step reduces. After the steps, a rank that must hold a
chunk it held from the start copies it from its input to its output (out of place).

Dependencies come from the data, rank by rank in schedule order (sends of a step read what
the rank held before the step): an op waits for the last op that wrote what it reads or
writes, and a write waits for the reads of the old data (a send is done when its receiver has
it, so its buffer may then change). No step waits for another rank's step: a rank forwards a
slice as soon as that slice is in, which is how the phases and the chunks pipeline.
Connections carry their sends in op order; both ends agree on it, so the runtime never waits
on a message behind one it cannot use (see the engine).
"""

from __future__ import annotations

import base64
import ctypes
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from jobs.ccl import native
from jobs.ccl.collectives import Chunk, Collective, Counts, Moved, build, get, replay
from jobs.ccl.datatypes import NO_OP, REDOPS, DataType
from jobs.ccl.schedule import Schedule
from jobs.gpus import Gpu

MAX_CHANNELS = 32
ALIGN = 64  # bytes between the arena's regions
SLICE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Member:
    """One rank of a communicator: its index among the engines, its GPU, its NIC's ports."""

    rank: int
    gpu: Gpu
    ports: int = 1


def qpn(src: int, dst: int, channel: int, total: int) -> int:
    """The wire name of the connection src -> dst on `channel` (both ends compute it)."""
    value = 1 + (src * total + dst) * MAX_CHANNELS + channel
    if value >= 1 << 24:
        raise ValueError(f"{total} ranks need more than 24 bits of QPN")
    return value


def entropy(q: int) -> int:
    """The UDP source port of a connection: spread over 49152-65535 (ECMP hashes it)."""
    return 49152 + ((q * 2654435761) >> 7) % 16384


@dataclass
class OpInfo:
    """What Python keeps of an op (records, bounds)."""

    kind: int
    step: int
    peer: int  # engine rank (-1: a local copy)
    channel: int
    nbytes: int
    transport: int = native.FABRIC
    port: int = 0


@dataclass
class RankPlan:
    rank: int
    dtype: DataType
    redop: int
    group: int
    arena: int = 0
    in_off: int = 0
    in_count: int = 0
    out_off: int = 0
    out_count: int = 0
    conns: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)
    # (qpn, peer, dir, transport, port, sport)
    fifo: dict[int, list[int]] = field(default_factory=dict)  # TX conn -> its send ops
    ops: list[list[int]] = field(default_factory=list)  # kind flags conn step src dst len match
    deps: list[set[int]] = field(default_factory=list)
    info: list[OpInfo] = field(default_factory=list)
    expect: list[tuple[int, int, int, tuple[int, ...], bool]] = field(default_factory=list)

    def pack(self) -> dict:
        """The plan as JSON-able data: scalars and base64 of the engine's arrays."""
        succ: dict[int, list[int]] = defaultdict(list)
        for i, deps in enumerate(self.deps):
            for d in sorted(deps):
                succ[d].append(i)
        succ_flat: list[int] = []
        ops = (native.Op * len(self.ops))()
        for i, (kind, flags, conn, step, src, dst, length, match) in enumerate(self.ops):
            mine = succ.get(i, [])
            ops[i] = native.Op(kind=kind, flags=flags, conn=conn, step=step, src=src, dst=dst,
                               len=length, match=match, ndeps=len(self.deps[i]),
                               succ_at=len(succ_flat), nsucc=len(mine))
            succ_flat += mine
        fifo_flat: list[int] = []
        conns = (native.Conn * len(self.conns))()
        for k, (q, peer, direction, transport, port, sport) in enumerate(self.conns):
            order = self.fifo.get(k, [])
            conns[k] = native.Conn(qpn=q, peer=peer, dir=direction, transport=transport,
                                   port=port, sport=sport, fifo_at=len(fifo_flat),
                                   nfifo=len(order))
            fifo_flat += order
        contrib: list[int] = []
        expect = (native.Expect * len(self.expect))()
        for x, (out, count, src, who, reduce) in enumerate(self.expect):
            expect[x] = native.Expect(out=out, count=count, src=src, contrib_at=len(contrib),
                                      ncontrib=len(who), reduce=int(reduce))
            contrib += who

        def b64(array: ctypes.Array) -> str:
            return base64.b64encode(bytes(array)).decode()

        return {"rank": self.rank, "dtype": self.dtype.code, "redop": self.redop,
                "group": self.group, "arena": self.arena, "in": self.in_off,
                "in_count": self.in_count, "out": self.out_off, "out_count": self.out_count,
                "nops": len(self.ops), "nconns": len(self.conns), "nsucc": len(succ_flat),
                "nfifo": len(fifo_flat), "nexpect": len(self.expect), "ncontrib": len(contrib),
                "conns": b64(conns), "ops": b64(ops),
                "succ": b64((native.u32 * len(succ_flat))(*succ_flat)),
                "fifo": b64((native.u32 * len(fifo_flat))(*fifo_flat)),
                "expect": b64(expect), "contrib": b64((native.u32 * len(contrib))(*contrib))}


@dataclass
class Compiled:
    """A collective compiled for every member (its plans by engine rank)."""

    collective: str
    algorithm: str
    counts: Counts
    dtype: DataType
    redop: int
    in_place: bool
    channels: int
    slice_bytes: int
    plans: dict[int, RankPlan]
    schedules: list[Schedule]  # per ring (channels share a ring: k div ports)
    depth: int = 0  # the longest chain of messages one after another

    def sent_bytes(self) -> dict[tuple[int, int, int], int]:
        """Bytes each rank sends, by (rank, transport, port)."""
        out: dict[tuple[int, int, int], int] = defaultdict(int)
        for r, p in self.plans.items():
            for o in p.info:
                if o.kind == native.SEND:
                    out[(r, o.transport, o.port)] += o.nbytes
        return dict(out)

    def received_bytes(self) -> dict[tuple[int, int, int], int]:
        """Bytes each rank receives, by (rank, transport, port of the sender)."""
        out: dict[tuple[int, int, int], int] = defaultdict(int)
        for p in self.plans.values():
            for o in p.info:
                if o.kind == native.SEND:
                    out[(o.peer, o.transport, o.port)] += o.nbytes
        return dict(out)


class _Rank:
    """One rank's plan in the making: regions, locations, dependencies."""

    def __init__(self, plan: RankPlan, size: int) -> None:
        self.plan = plan
        self.size = size
        self.writer: dict[object, int] = {}
        self.readers: dict[object, list[int]] = defaultdict(list)
        self.scratch: dict[int, int] = {}  # chunk -> element offset
        self.conn_index: dict[tuple[int, int, int], int] = {}

    def conn(self, key: tuple[int, int, int], desc: tuple[int, int, int, int, int, int]) -> int:
        if key not in self.conn_index:
            self.conn_index[key] = len(self.plan.conns)
            self.plan.conns.append(desc)
        return self.conn_index[key]

    def add(self, op: list[int], info: OpInfo, reads: Sequence[object],
            writes: Sequence[object]) -> int:
        i = len(self.plan.ops)
        deps: set[int] = set()
        for r in reads:
            if r in self.writer:
                deps.add(self.writer[r])
        for w in writes:
            if w in self.writer:
                deps.add(self.writer[w])
            deps.update(self.readers.get(w, ()))
        for r in reads:
            self.readers[r].append(i)
        for w in writes:
            self.writer[w] = i
            self.readers.pop(w, None)
        deps.discard(i)
        self.plan.ops.append(op)
        self.plan.deps.append(deps)
        self.plan.info.append(info)
        return i


def _slices(elems: int, part: int, parts: int, slice_elems: int) -> list[tuple[int, int]]:
    """(element offset in the chunk, elements) of the slices of part `part` of a chunk cut into
    `parts` (a channel's segment)."""
    if elems == 0:
        return [(0, 0)] if part == 0 else []
    lo = part * elems // parts
    hi = (part + 1) * elems // parts
    if hi == lo:
        return []
    return [(at, min(slice_elems, hi - at)) for at in range(lo, hi, slice_elems)]


def compile_collective(name: str, algorithm: str | None, members: Sequence[Member], *,
                       total_ranks: int, count: int, dtype: DataType, redop: int = 0,
                       root: int = 0, in_place: bool = False, channels: int = 1,
                       slice_bytes: int = SLICE_BYTES,
                       schedule: Schedule | None = None) -> Compiled:
    """Every member's plan for collective `name` of nccl-tests' `count` elements (module
    docstring); `schedule` replaces the algorithm's (tests, the lab), for every channel."""
    coll = get(name)
    algorithm = coll.algorithm(algorithm)
    n = len(members)
    if not 1 <= channels <= MAX_CHANNELS:
        raise ValueError(f"channels must be 1..{MAX_CHANNELS}, got {channels}")
    if slice_bytes < dtype.size:
        raise ValueError(f"slices must hold at least one {dtype.name} ({dtype.size} B)")
    counts = coll.counts(count, n, dtype.size)
    chunks = coll.chunks(counts, n, root)
    op = redop if coll.reduces else NO_OP
    gpus = [m.gpu for m in members]
    size = dtype.size
    plans: dict[int, RankPlan] = {}
    ranks: list[_Rank] = []
    for i, m in enumerate(members):
        p = RankPlan(m.rank, dtype, op, n)
        _layout(p, coll, counts, i, in_place, size)
        plans[m.rank] = p
        ranks.append(_Rank(p, size))
    nports = min(m.ports for m in members)
    rings: dict[int, Schedule] = {}
    empty = counts.send == 0 and counts.recv == 0
    segments = coll.algorithms[algorithm].segments
    moved: dict[int, dict[int, list[Moved]]] = {}  # per ring: the schedule's moves by step
    for channel in range(channels):
        if empty:
            break
        ring = channel // max(1, nports)
        if ring not in rings:
            rings[ring] = schedule or build(name, algorithm, gpus, counts.param * size, root, ring)
            moved[ring] = defaultdict(list)
            for mv in replay(rings[ring], chunks)[1]:
                moved[ring][mv.step].append(mv)
        parts = [_Segment(ranks, members, coll, chunks, moved[ring], channel,
                          channel * segments + k, channels * segments,
                          max(1, slice_bytes // size), total_ranks, op,
                          len(rings[ring].steps)) for k in range(segments)]
        # a connection carries a phase's messages segment by segment: the next segment's
        # first phase overlaps this one's next (ops in this order are in dependency order)
        for steps in phases(rings[ring]):
            for part in parts:
                part.steps(steps)
        for part in parts:
            part.finish()
    for i, r in enumerate(ranks):
        _expect(r.plan, chunks, i, members, coll.reduces)
    compiled = Compiled(name, algorithm, counts, dtype, op, in_place, channels, slice_bytes,
                        plans, list(rings.values()))
    compiled.depth = _depth(compiled)
    return compiled


def _align(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def _layout(p: RankPlan, coll: Collective, counts: Counts, index: int, in_place: bool,
            size: int) -> None:
    """Input and output in the arena as nccl-tests places them (in place: one buffer)."""
    p.in_count, p.out_count = counts.send, counts.recv
    if in_place:
        whole = max(counts.send, counts.recv)
        p.in_off = index * counts.send_inplace * size
        p.out_off = index * counts.recv_inplace * size
        p.arena = _align(whole * size)
    else:
        p.in_off = 0
        p.out_off = _align(counts.send * size)
        p.arena = p.out_off + _align(counts.recv * size)


def phases(schedule: Schedule) -> list[range]:
    """The schedule's steps in runs that use the same kinds of link (NVLink, fabric, both)."""
    out: list[range] = []
    kinds: set[str] | None = None
    for i, step in enumerate(schedule.steps):
        mine = {f.link for f in step.flows}
        if out and mine == kinds:
            out[-1] = range(out[-1].start, i + 1)
        else:
            out.append(range(i, i + 1))
            kinds = mine
    return out


class _Segment:
    """The ops of one segment of one channel: part `part` of every chunk cut in `parts`. Each
    call of `steps` emits the moves of a range of the schedule's steps, slice by slice;
    `finish` the final copies. Where each rank holds each chunk carries over between calls."""

    def __init__(self, ranks: list[_Rank], members: Sequence[Member], coll: Collective,
                 chunks: list[Chunk], moved: dict[int, list[Moved]], channel: int, part: int,
                 parts: int, slice_elems: int, total: int, redop: int, last_step: int) -> None:
        self.ranks, self.members, self.coll, self.chunks = ranks, members, coll, chunks
        self.moved, self.channel, self.part, self.parts = moved, channel, part, parts
        self.slice_elems, self.total, self.redop, self.last_step = slice_elems, total, redop, \
            last_step
        self.size = ranks[0].size
        self.holder = [dict(c.holders) for c in chunks]
        self.target = [dict(c.targets) for c in chunks]
        self.everyone = [frozenset(h) for h in self.holder]
        # where each rank holds each chunk now: ("in" | "out" | "scratch", element offset)
        self.where: list[dict[int, tuple[str, int]]] = [
            {c: ("in", self.holder[c][r]) for c in range(len(chunks)) if r in self.holder[c]}
            for r in range(len(members))]

    def element(self, r: int, loc: tuple[str, int]) -> int:
        """The arena element offset of a location of rank r."""
        kind, off = loc
        p = self.ranks[r].plan
        if kind == "in":
            return p.in_off // self.size + off
        if kind == "out":
            return p.out_off // self.size + off
        return off

    def final(self, r: int, c: int) -> tuple[str, int]:
        """Where chunk c must end at rank r: its output, or scratch if not a target there."""
        if r in self.target[c]:
            return ("out", self.target[c][r])
        scratch = self.ranks[r].scratch  # one per chunk: its parts are disjoint
        if c not in scratch:
            p = self.ranks[r].plan
            scratch[c] = p.arena // self.size
            p.arena = _align(p.arena + self.chunks[c].elems * self.size)
        return ("scratch", scratch[c])

    def region(self, r: int, c: int, loc: tuple[str, int], at: int, elems: int) -> object:
        """What dependencies name a slice by: its bytes, or (empty) what it holds."""
        if elems == 0:
            return ("empty", c, loc[0], self.part)
        return (self.element(r, loc) + at) * self.size

    def slices(self, c: int) -> list[tuple[int, int]]:
        return _slices(self.chunks[c].elems, self.part, self.parts, self.slice_elems)

    def steps(self, steps: range) -> None:
        for step in steps:
            self._step(step, self.moved.get(step, []))

    def _step(self, step: int, moves: list[Moved]) -> None:
        ranks, members, size, channel = self.ranks, self.members, self.size, self.channel
        sends: list[list[tuple[int, int, int, int, int]]] = []  # per move: its slices' sends
        for m in moves:  # the sends read what the step starts from
            s, d, c = m.flow.src, m.flow.dst, m.chunk
            loc = self.where[s].get(c) or self.final(s, c)
            same_server = members[s].gpu.server == members[d].gpu.server
            transport = native.NVLINK if same_server else native.FABRIC  # whatever a flow says
            port = channel % members[s].ports
            q = qpn(members[s].rank, members[d].rank, channel, self.total)
            tx = ranks[s].conn((native.TX, d, channel),
                               (q, members[d].rank, native.TX, transport, port, entropy(q)))
            mine = []
            for at, elems in self.slices(c):
                op = [native.SEND, 0, tx, step, (self.element(s, loc) + at) * size, 0,
                      elems * size, 0]
                i = ranks[s].add(op, OpInfo(native.SEND, step, members[d].rank, channel,
                                            elems * size, transport, port),
                                 [self.region(s, c, loc, at, elems)], [])
                ranks[s].plan.fifo.setdefault(tx, []).append(i)
                mine.append((at, elems, i, transport, q))
            sends.append(mine)
        for m, mine in zip(moves, sends, strict=True):  # then the step's writes
            s, d, c = m.flow.src, m.flow.dst, m.chunk
            dst_loc, had_loc = self.final(d, c), self.where[d].get(c)
            reduce = m.reduced and had_loc is not None
            postop = self.coll.reduces and self.redop == REDOPS["avg"] and reduce and \
                m.now == self.everyone[c] and m.had != self.everyone[c]
            for at, elems, send_i, transport, q in mine:
                rx = ranks[d].conn((native.RX, s, channel),
                                   (q, members[s].rank, native.RX, transport,
                                    channel % members[d].ports, entropy(q)))
                flags, src2, reads = 0, 0, []
                if reduce:
                    assert had_loc is not None
                    flags |= native.REDUCE
                    src2 = (self.element(d, had_loc) + at) * size
                    reads = [self.region(d, c, had_loc, at, elems)]
                if postop:
                    flags |= native.POSTOP
                op = [native.RECV, flags, rx, step, src2,
                      (self.element(d, dst_loc) + at) * size, elems * size, 0]
                j = ranks[d].add(op, OpInfo(native.RECV, step, members[s].rank, channel,
                                            elems * size, transport, channel % members[s].ports),
                                 reads, [self.region(d, c, dst_loc, at, elems)])
                ranks[s].plan.ops[send_i][7] = j  # the send names its receive
            self.where[d][c] = dst_loc

    def finish(self) -> None:
        """What must end in the output but never moved there is copied from the input."""
        size = self.size
        for r in range(len(self.members)):
            for c in range(len(self.chunks)):
                loc = self.where[r].get(c)
                if r not in self.target[c] or loc is None or loc[0] != "in":
                    continue
                out = ("out", self.target[c][r])
                for at, elems in self.slices(c):
                    src = (self.element(r, loc) + at) * size
                    dst = (self.element(r, out) + at) * size
                    if src == dst or elems == 0:
                        continue  # in place: already there
                    self.ranks[r].add([native.COPY, 0, 0, self.last_step, src, dst,
                                       elems * size, 0],
                                      OpInfo(native.COPY, self.last_step, -1, self.channel,
                                             elems * size),
                                      [self.region(r, c, loc, at, elems)],
                                      [self.region(r, c, out, at, elems)])


def _expect(p: RankPlan, chunks: list[Chunk], index: int, members: Sequence[Member],
            reduces: bool) -> None:
    """What the rank's output must hold, contiguous ranges from the same ranks merged."""
    entries: list[tuple[int, int, int, tuple[int, ...], bool]] = []
    for c in sorted(chunks, key=lambda ch: dict(ch.targets).get(index, -1)):
        if index not in dict(c.targets) or c.elems == 0:
            continue
        out = dict(c.targets)[index]
        who = tuple(sorted(members[r].rank for r, _ in c.holders))
        src = c.holders[0][1]
        if not reduces:
            who = who[:1]
        if entries:
            o, k, s, w, red = entries[-1]
            if w == who and o + k == out and s + k == src:
                entries[-1] = (o, k + c.elems, s, w, red)
                continue
        entries.append((out, c.elems, src, who, reduces))
    p.expect = entries


def _depth(compiled: Compiled) -> int:
    """The longest chain of messages in the dataflow (one per send-to-receive hop). Ops in
    (step, sends before receives before copies) order are in dependency order: a receive
    follows its send, and a rank's ops depend only on its earlier ones."""
    plans = compiled.plans
    receive_of: dict[tuple[int, int], tuple[int, int]] = {}
    for r, p in plans.items():
        for i, op in enumerate(p.ops):
            if op[0] == native.SEND:
                receive_of[(p.info[i].peer, op[7])] = (r, i)
    ordered = sorted(((p.ops[i][3], p.ops[i][0], r, i) for r, p in plans.items()
                      for i in range(len(p.ops))))
    longest: dict[tuple[int, int], int] = {}
    for _, _, r, i in ordered:
        best = max((longest[(r, d)] for d in plans[r].deps[i]), default=0)
        if (r, i) in receive_of:
            best = max(best, longest[receive_of[(r, i)]] + 1)
        longest[(r, i)] = best
    return max(longest.values(), default=0)


def merge(parts: Sequence[Compiled]) -> Compiled:
    """Collectives of disjoint groups of ranks (each its own communicator, as a job's
    data-parallel groups are) as one launch."""
    if not parts:
        raise ValueError("nothing to merge")
    plans: dict[int, RankPlan] = {}
    for part in parts:
        overlap = set(plans) & set(part.plans)
        if overlap:
            raise ValueError(f"groups share ranks {sorted(overlap)}")
        plans.update(part.plans)
    first = parts[0]
    return Compiled(first.collective, first.algorithm, first.counts, first.dtype, first.redop,
                    first.in_place, first.channels, first.slice_bytes, plans,
                    [s for p in parts for s in p.schedules], max(p.depth for p in parts))
