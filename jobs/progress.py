"""What a running training job tells a watcher, as typed events (`jobs.train.train(on_event=)`).

In the order they come: `JobStarted`; per iteration, per collective, `CollectiveStarted`, one
`StepDone` per step of its schedule (reported when the collective is done: the runtime runs
its steps as a dataflow), `CollectiveDone`;
then `IterationDone`; at the end `JobDone`. Times and bandwidths are the modelled job's (as
the report's); bytes are what the emulation moves (real packets, NVLink as modelled time).
The web view (`fabric_lab.web.job`) turns them into its job panel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jobs.ccl.schedule import Schedule


@dataclass(frozen=True)
class JobStarted:
    job: str
    iterations: int
    nics: tuple[str, ...]  # per rank, the NIC beside its GPU


@dataclass(frozen=True)
class CollectiveStarted:
    iteration: int
    purpose: str  # the job's name for it: "dp-bucket-0", "tp", ...
    kind: str
    algorithm: str
    bytes: int  # modelled, per rank (nccl-tests' S)
    emulated_bytes: int
    phases: tuple[str, ...]  # per step of the schedule
    rank_bytes: tuple[int, ...]  # per rank, the bytes the schedule delivers to it
    rank_steps: tuple[int, ...]  # per rank, the steps in which it receives


@dataclass(frozen=True)
class StepDone:
    iteration: int
    purpose: str
    index: int
    phase: str
    time_s: float
    complete: bool
    rank_bytes: tuple[int, ...]  # per rank, bytes received in this step
    rank_end_s: tuple[float, ...]  # per rank, when its last byte arrived (0: nothing)


@dataclass(frozen=True)
class CollectiveDone:
    iteration: int
    purpose: str
    time_s: float
    busbw_gbs: float
    complete: bool
    wrong: int


@dataclass(frozen=True)
class IterationDone:
    iteration: int
    total_s: float
    compute_s: float
    exposed_s: float
    slowest_rank: int
    slowest_nic: str
    rank_s: tuple[float, ...]  # per rank, its own iteration


@dataclass(frozen=True)
class JobDone:
    job: str
    iterations: int


JobEvent = JobStarted | CollectiveStarted | StepDone | CollectiveDone | IterationDone | JobDone
OnEvent = Callable[[JobEvent], None]


def collective_started(iteration: int, purpose: str, kind: str, algorithm: str, nbytes: int,
                       schedule: Schedule) -> CollectiveStarted:
    """The event for `schedule` about to run: its phases and what each rank is to receive."""
    into = [0] * schedule.ranks
    steps = [0] * schedule.ranks
    for step in schedule.steps:
        for r in {f.dst for f in step.flows}:
            steps[r] += 1
        for f in step.flows:
            into[f.dst] += f.bytes
    return CollectiveStarted(iteration, purpose, kind, algorithm, nbytes, schedule.size,
                             tuple(s.phase for s in schedule.steps), tuple(into), tuple(steps))
