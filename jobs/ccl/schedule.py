"""A collective algorithm as a schedule: steps of flows, each flow moving named chunks.

An algorithm (`jobs.ccl.algorithms`) says which rank sends which chunks to which rank, step by
step; a step whose phase contains `REDUCE` combines what arrives with the receiver's copy, any
other step copies. The steps order each rank's work and say where data comes from; they are
not barriers: the runtime (`jobs.ccl.plan`) turns a schedule into every rank's dataflow, in
which a rank forwards a piece of data as soon as it has arrived, and cuts chunks into
channels and slices that pipeline. A flow between GPUs of one server is tagged `NVLINK`,
others `FABRIC`; `bytes` is what the flow carries at the schedule's size (chunk bytes x
chunks), for reading a schedule, not for running it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FABRIC, NVLINK = "fabric", "nvlink"
REDUCE = "reduce"  # a phase name containing this reduces; others copy


@dataclass(frozen=True, order=True)
class Flow:
    src: int
    dst: int
    bytes: int
    link: str = FABRIC  # FABRIC or NVLINK
    chunks: tuple[int, ...] = ()


@dataclass
class Step:
    flows: list[Flow]
    phase: str = ""

    @property
    def reduces(self) -> bool:
        return REDUCE in self.phase

    def pairs(self) -> set[tuple[int, int]]:
        return {(f.src, f.dst) for f in self.flows}


@dataclass
class Schedule:
    name: str
    ranks: int
    size: int  # nccl-tests' S, bytes
    steps: list[Step] = field(default_factory=list)
    busbw_factor: float = 1.0  # bus bandwidth = algorithm bandwidth x this

    def total_bytes(self) -> int:
        return sum(f.bytes for s in self.steps for f in s.flows)

    def link_bytes(self, link: str) -> list[int]:
        """Per rank, the bytes its flows of `link` send."""
        out = [0] * self.ranks
        for s in self.steps:
            for f in s.flows:
                if f.link == link:
                    out[f.src] += f.bytes
        return out
