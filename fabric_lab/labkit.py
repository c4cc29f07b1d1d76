"""The course's labs: where they live, how a lab's checker is written, and how it runs.

Each lab is a directory `labs/NN-name/` with a README (the handout), the skeleton a student
copies (`FILE`, a P4 program or a Python module with TODOs) and `check.py`, which defines:

    TITLE, MINUTES, PREREQS, FILE    what `fabric-lab lab list` shows; FILE is the skeleton
    STEPS = [Step("name", check, "hint"), ...]

A check gets a `Work` (the student's file, compiled or imported on first use) and raises
`StepFailed` with what it saw; the hint says where to look. The solution of lab NN-name is
`labs/solutions/NN-name/FILE`. P4 labs run the student's program in the p4switch engine packet
by packet (`LabSwitch`: no root, no processes), with the controller's entries written directly.
The packets are the lab's scapy-built RoCEv2 frames (`experiments.lb.switch.roce_frame`), read
back with the lab's scapy layers. Not STF: routing's `ipv4_lpm` sits behind an action selector,
which STF's `add` (simple_switch_CLI's table_add) cannot program, and the flowlet and ECN checks
need a clock and queue depths the checker sets per packet.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
P4SRC = REPO / "p4src"
LABS = REPO / "labs"
SOLUTIONS = LABS / "solutions"


class StepFailed(Exception):
    """A check's verdict: what was expected and what the student's program did."""


class LabError(Exception):
    """A lab that does not exist, or a file that cannot be checked."""


@dataclass(frozen=True)
class Step:
    name: str
    check: Callable[[Work], str | None]  # returns an optional note shown on PASS
    hint: str
    after_all: bool = False  # an experiment: runs only when every step before it passed


@dataclass
class Lab:
    number: int
    slug: str  # "01-ecmp"
    title: str
    minutes: int
    prereqs: str
    file: str
    steps: list[Step]
    path: Path

    @property
    def skeleton(self) -> Path:
        return self.path / self.file

    @property
    def solution(self) -> Path:
        return SOLUTIONS / self.slug / self.file

    @property
    def kind(self) -> str:
        return "P4" if self.file.endswith(".p4") else "Python"


@dataclass
class StepResult:
    step: Step
    passed: bool
    detail: str = ""
    seconds: float = 0.0
    skipped: bool = False


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LabError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def labs(root: Path = LABS) -> list[Lab]:
    """Every lab under `root`, in course order."""
    out = []
    for check in sorted(root.glob("[0-9][0-9]-*/check.py")):
        slug = check.parent.name
        module = _module(check, f"fabric_lab_labs_{slug.replace('-', '_')}")
        out.append(Lab(int(slug[:2]), slug, module.TITLE, module.MINUTES, module.PREREQS,
                       module.FILE, list(module.STEPS), check.parent))
    return out


def lab(number: int) -> Lab:
    found = [item for item in labs() if item.number == number]
    if not found:
        raise LabError(f"no lab {number}; `fabric-lab lab list` shows them")
    return found[0]


class Work:
    """The student's file as the checks see it: compiled (P4) or imported (Python) once."""

    def __init__(self, lab: Lab, program: Path) -> None:
        self.lab = lab
        self.program = program
        self.data: dict[str, Any] = {}  # what one step leaves for the next

    @property
    def out_dir(self) -> Path | None:
        """Where a check may write its CSV: next to the student's file, never into labs/."""
        folder = self.program.resolve().parent
        return None if folder.is_relative_to(LABS) else folder

    @cached_property
    def compiled(self) -> Any:
        from p4switch.compiler import P4CompileError, compile_program

        try:
            return compile_program(self.program, include_dirs=[P4SRC])
        except P4CompileError as err:
            shown = [str(d) for d in getattr(err, "diagnostics", [])] or str(err).splitlines()
            raise StepFailed("\n".join(shown[:8])) from None

    @cached_property
    def module(self) -> ModuleType:
        try:
            return _module(self.program, f"student_{self.lab.slug.replace('-', '_')}")
        except Exception as err:  # a student's module may fail in any way when imported
            lines = traceback.format_exception_only(type(err), err)
            raise StepFailed("".join(lines).strip()) from None

    def switch(self, ports: list[int], **knobs: Any) -> LabSwitch:
        return LabSwitch(self.compiled, ports, **knobs)

    def function(self, name: str) -> Callable[..., Any]:
        found = getattr(self.module, name, None)
        if not callable(found):
            raise StepFailed(f"{self.program.name} defines no function {name}()")
        return found


def compiles(work: Work) -> str:
    """The step every P4 lab starts with: the student's program compiles with the pipeline."""
    _ = work.compiled
    return "compiled with the lab's pipeline"


def run_checks(lab: Lab, program: Path, *, experiments: bool = True) -> list[StepResult]:
    """Every step of `lab` on `program`, in order; after a failed step the later ones still
    run unless the file did not even compile (or import). `experiments=False` leaves out the
    steps that run an experiment (reported as skipped)."""
    if not program.is_file():
        raise LabError(f"{program}: no such file")
    work = Work(lab, program)
    results: list[StepResult] = []
    broken = False
    for step in lab.steps:
        if broken:
            results.append(StepResult(step, False, "not run: the file does not build",
                                      skipped=True))
            continue
        if step.after_all and not experiments:
            results.append(StepResult(step, False, "not run: experiments left out",
                                      skipped=True))
            continue
        if step.after_all and not all(r.passed for r in results):
            results.append(StepResult(step, False, "not run: pass the steps above first",
                                      skipped=True))
            continue
        started = time.monotonic()
        try:
            note = step.check(work)
            results.append(StepResult(step, True, note or "", time.monotonic() - started))
        except StepFailed as failed:
            results.append(StepResult(step, False, str(failed), time.monotonic() - started))
            broken = not results[:-1]  # the first step builds the file
        except Exception as err:  # the student's code raised: a failure, not a crash
            detail = "".join(traceback.format_exception_only(type(err), err)).strip()
            results.append(StepResult(step, False, f"raised {detail}",
                                      time.monotonic() - started))
    return results


# ---- the p4switch engine, driven packet by packet -------------------------------------------
def by_suffix(names: Iterable[str], suffix: str) -> str:
    from p4switch.names import suffix_matches

    matches = suffix_matches(names, suffix)
    if len(matches) != 1:
        raise StepFailed(f"the program must have exactly one {suffix!r}; it has "
                         f"{matches or 'none'} (keep the lab's table and action names)")
    return matches[0]


class LabSwitch:
    """One switch running a compiled lab program with one ECMP group for 10.0.0.0/8 to
    `ports`, set up as the controller would: hash seed, flowlet gap, DLB tagging ports."""

    def __init__(self, compiled: Any, ports: list[int], *, seed: int = 0,
                 flowlet_gap_us: int | None = None, host_ports: Iterable[int] = ()) -> None:
        from experiments.lb.switch import program_single_switch
        from p4switch.engine import EngineConfig
        from p4switch.runtime import RuntimeState

        self.ports = list(ports)
        self.now_us = 1
        self.model = compiled.model
        self.state = RuntimeState(compiled.model)
        self.engine = compiled.new_engine(self.state, EngineConfig(now_us=lambda: self.now_us))
        self.tables = [t.name for t in self.model.tables]
        self.actions = [a.name for a in self.model.actions]
        program_single_switch(self.state, self.model, self.ports, seed=seed,
                              flowlet_gap_us=flowlet_gap_us, host_ports=host_ports)

    def forward(self, frame: bytes, ingress_port: int = 100) -> tuple[int, bytes]:
        """(egress port, frame as it leaves); StepFailed when the pipeline drops it."""
        out = self.engine.process(ingress_port, frame)
        if not out:
            raise StepFailed("the switch dropped a routed RoCEv2 packet")
        return out[0]

    def egress_port(self, frame: bytes, ingress_port: int = 100) -> int:
        return self.forward(frame, ingress_port)[0]

    def at_depth(self, frame: bytes, enq_qdepth: int, ingress_port: int = 100) -> bytes:
        """The frame as it leaves after waiting in a queue `enq_qdepth` packets deep."""
        queued = self.engine.ingress(ingress_port, frame)
        if not queued:
            raise StepFailed("the switch dropped a routed RoCEv2 packet in ingress")
        out, _ = self.engine.egress(queued[0], enq_qdepth=enq_qdepth)
        if not out:
            raise StepFailed(f"the switch dropped the packet in egress (queue depth "
                             f"{enq_qdepth})")
        return out[0][1]

    def insert(self, table_suffix: str, keys: tuple, action_suffix: str,
               params: tuple = (), priority: int = 0) -> None:
        from p4switch.cpmodel import ActionCall
        from p4switch.runtime.entries import Entry

        self.state.table(by_suffix(self.tables, table_suffix)).insert(
            Entry(keys=keys, priority=priority,
                  action=ActionCall(by_suffix(self.actions, action_suffix), params)))

    def counter(self, suffix: str, index: int) -> int:
        names = [c.name for c in self.model.counters]
        return self.state.counter(by_suffix(names, suffix)).read(index)[0]


def roce_frame(sport: int, *, src_ip: str = "10.0.0.1", dst_ip: str = "10.0.1.1",
               psn: int = 0, payload: int = 64, ecn: int = 2) -> bytes:
    """An RDMA WRITE ONLY frame of one queue pair (ECT(0) unless `ecn` says otherwise)."""
    from experiments.lb.switch import roce_frame as frame

    data = bytearray(frame(sport, src_ip=src_ip, dst_ip=dst_ip, psn=psn, payload=payload))
    if ecn != 2 or (data[15] & 3) != 2:
        data[15] = (data[15] & 0xFC) | ecn
        data[24:26] = b"\0\0"
        data[24:26] = _ip_checksum(bytes(data[14:34])).to_bytes(2, "big")
    return bytes(data)


def _ip_checksum(header: bytes) -> int:
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def reference_program(name: str) -> Any:
    """The lab's own `p4src/<name>.p4`, compiled (cached), to compare a student's program with."""
    from experiments.lb.single_switch import load_program

    return load_program(name)


@dataclass
class Spread:
    """How flows fell on ports."""

    counts: dict[int, int] = field(default_factory=dict)

    def add(self, port: int) -> None:
        self.counts[port] = self.counts.get(port, 0) + 1

    def __str__(self) -> str:
        return ", ".join(f"port {p}: {n}" for p, n in sorted(self.counts.items()))
