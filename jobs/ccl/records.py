"""What a recorded run says, op by op (a run with `record=True`): when every send was posted
and done, when every receive was ready and done, read back into messages and steps.

    timeline = Timeline.of(compiled, result)
    timeline.messages      # every message: src, dst, bytes, fabric or NVLink, start, end
    timeline.steps         # per schedule step, per rank: when its last receive of it was done

Times are seconds from the run's launch, of the run's last iteration. A message starts when
its send is posted (its data ready, its receiver with room) and ends when the receiver has it
all; what it waited for in between (the port, the links, loss) is what a message's time says
about the fabric.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from dataclasses import dataclass, field

from jobs.ccl import native
from jobs.ccl.communicator import RunResult
from jobs.ccl.plan import Compiled


@dataclass(frozen=True)
class Message:
    src: int
    dst: int
    step: int
    channel: int
    nbytes: int
    fabric: bool  # False: NVLink
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)


@dataclass
class StepTimes:
    """One schedule step: per rank, the bytes it received in it and when its last receive of
    it was done (0.0: it received nothing in this step)."""

    step: int
    rank_bytes: dict[int, int] = field(default_factory=dict)
    rank_end_s: dict[int, float] = field(default_factory=dict)


@dataclass
class Timeline:
    messages: list[Message]
    steps: list[StepTimes]
    rank_end_s: dict[int, float]  # per rank: its last op of the last iteration done

    @classmethod
    def of(cls, compiled: Compiled, result: RunResult) -> Timeline:
        """The last iteration of a recorded run of `compiled`."""
        times: dict[int, list[tuple[float, float]]] = {}
        rank_end: dict[int, float] = {}
        for rank, plan in compiled.plans.items():
            run = result.ranks.get(rank)
            nops = len(plan.ops)
            if run is None or not run.records or not nops:
                continue
            values = struct.unpack(f"{len(run.records) // 8}Q", run.records)
            last = (run.iterations - 1 if run.iterations else 0) * nops * 2
            pairs = []
            for i in range(nops):
                post, done = values[last + 2 * i], values[last + 2 * i + 1]
                pairs.append(((post - run.start_ns) / 1e9 if post else -1.0,
                              (done - run.start_ns) / 1e9 if done else -1.0))
            times[rank] = pairs
            rank_end[rank] = max((d for _, d in pairs), default=0.0)
        messages: list[Message] = []
        steps: dict[int, StepTimes] = {}
        for rank, plan in compiled.plans.items():
            if rank not in times:
                continue
            for i, info in enumerate(plan.info):
                if info.kind == native.RECV:
                    st = steps.setdefault(info.step, StepTimes(info.step))
                    st.rank_bytes[rank] = st.rank_bytes.get(rank, 0) + info.nbytes
                    st.rank_end_s[rank] = max(st.rank_end_s.get(rank, 0.0), times[rank][i][1])
                if info.kind != native.SEND or info.peer not in times:
                    continue
                recv = plan.ops[i][7]
                messages.append(Message(rank, info.peer, info.step, info.channel, info.nbytes,
                                        info.transport == native.FABRIC, times[rank][i][0],
                                        times[info.peer][recv][1]))
        return cls(messages, [steps[k] for k in sorted(steps)], rank_end)

    def link_bytes(self) -> dict[tuple[int, int], int]:
        """Fabric bytes per (src, dst) rank pair."""
        out: dict[tuple[int, int], int] = defaultdict(int)
        for m in self.messages:
            if m.fabric:
                out[(m.src, m.dst)] += m.nbytes
        return dict(out)
