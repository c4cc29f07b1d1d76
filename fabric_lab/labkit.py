"""The course's labs: where they live, how a lab's checker is written, and how it runs.

Each lab is a directory `labs/NN-name/` with a README (the handout), the skeleton a student
copies (`FILE`, a P4 program or a Python module with TODOs) and `check.py`, which defines:

    TITLE, MINUTES, PREREQS, FILE    what `fabric-lab lab list` shows; FILE is the skeleton
    STEPS = [Step("name", check, "hint"), ...]
    OWN_CONTROLS, WITHHELD      P4 labs: the controls the student's file must declare, and the
                                p4src/include files `lab start` leaves out (fabric_lab/closedbook.py)
    FORBIDDEN_IMPORTS           Python labs: {module: why} the answer may not import

A check gets a `Work` (the student's file, compiled or imported on first use) and raises
`StepFailed` with what it saw; the hint says where to look. The solution of lab NN-name is
`labs/solutions/NN-name/FILE`. P4 labs run the student's program in the p4switch engine packet
by packet (`LabSwitch`, the experiments' `EngineSwitch`: no root, no processes), programmed as the
controller programs a switch. The packets are the lab's scapy-built RoCEv2 frames
(`experiments.framework.engine_switch.roce_frame`), read
back with the lab's scapy layers. Not STF: routing's `ipv4_lpm` sits behind an action selector,
which STF's `add` (simple_switch_CLI's table_add) cannot program, and the flowlet and ECN checks
need a clock and queue depths the checker sets per packet.
"""

from __future__ import annotations

import contextlib
import importlib.util
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from experiments.framework.engine_switch import EngineSwitch, by_suffix, load_program
from experiments.framework.engine_switch import roce_frame as engine_roce_frame
from mechanisms import P4SRC
from p4switch.names import suffix_matches
from topos.errors import FabricLabError

REPO = Path(__file__).resolve().parent.parent
LABS = REPO / "labs"
SOLUTIONS = LABS / "solutions"


class StepFailed(Exception):
    """A check's verdict: what was expected and what the student's program did."""


class LabError(FabricLabError):
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
    own_controls: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()
    forbidden_imports: dict[str, str] = field(default_factory=dict)

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
                       module.FILE, list(module.STEPS), check.parent,
                       tuple(getattr(module, "OWN_CONTROLS", ())),
                       tuple(getattr(module, "WITHHELD", ())),
                       dict(getattr(module, "FORBIDDEN_IMPORTS", {}))))
    return out


def lab(number: int) -> Lab:
    found = [item for item in labs() if item.number == number]
    if not found:
        raise LabError(f"no lab {number}; `fabric-lab lab list` shows them")
    return found[0]


class Work:
    """The student's file as the checks see it: compiled (P4) or imported (Python) once."""

    def __init__(self, lab: Lab, program: Path, seed: int = 0) -> None:
        self.lab = lab
        self.program = program
        self.seed = seed  # of the hidden cases
        self.data: dict[str, Any] = {}  # what one step leaves for the next

    def rng(self, case: str) -> random.Random:
        """The random source of one hidden case: flows, values and orders no handout lists."""
        from fabric_lab.closedbook import hidden_rng

        return hidden_rng(self.seed, case)

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
        from fabric_lab.closedbook import own_imports

        with contextlib.suppress(SyntaxError):  # importing it below reports the error
            own_imports(self.program, self.lab.forbidden_imports)
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
    """The step every P4 lab starts with: the student's program compiles with the pipeline,
    and declares the lab's controls itself (closed book: not included from the reference)."""
    from fabric_lab.closedbook import own_controls

    _ = work.compiled
    mine = own_controls(work.program, work.lab.own_controls, work.lab.withheld)
    return f"compiled with the lab's pipeline; {mine}"


def run_checks(lab: Lab, program: Path, *, experiments: bool = True,
               seed: int = 0) -> list[StepResult]:
    """Every step of `lab` on `program`, in order; after a failed step the later ones still
    run unless the file did not even compile (or import). `experiments=False` leaves out the
    steps that run an experiment (reported as skipped). `seed` draws the hidden cases."""
    if not program.is_file():
        raise LabError(f"{program}: no such file")
    work = Work(lab, program, seed)
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
class LabSwitch(EngineSwitch):
    """One switch running a compiled lab program with one ECMP group for 10.0.0.0/8 to
    `ports`, set up as the controller would: hash seed, flowlet gap, DLB tagging ports
    (`experiments.framework.engine_switch.EngineSwitch`); what it drops, or a name the program
    lacks, is the check's verdict (`StepFailed`)."""

    dropped = StepFailed

    def lookup(self, names: Iterable[str], suffix: str) -> str:
        try:
            return by_suffix(names, suffix)
        except LookupError:
            matches = suffix_matches(names, suffix)
            raise StepFailed(f"the program must have exactly one {suffix!r}; it has "
                             f"{matches or 'none'} (keep the lab's table and action names)"
                             ) from None


def roce_frame(sport: int, *, src_ip: str = "10.0.0.1", dst_ip: str = "10.0.1.1",
               psn: int = 0, payload: int = 64, ecn: int = 2) -> bytes:
    """An RDMA WRITE ONLY frame of one queue pair (ECT(0) unless `ecn` says otherwise)."""
    data = bytearray(engine_roce_frame(sport, src_ip=src_ip, dst_ip=dst_ip, psn=psn, payload=payload))
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
    return load_program(name)


@dataclass
class Spread:
    """How flows fell on ports."""

    counts: dict[int, int] = field(default_factory=dict)

    def add(self, port: int) -> None:
        self.counts[port] = self.counts.get(port, 0) + 1

    def __str__(self) -> str:
        return ", ".join(f"port {p}: {n}" for p, n in sorted(self.counts.items()))
