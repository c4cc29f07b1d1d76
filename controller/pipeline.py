"""The artefacts a P4Runtime pipeline push carries: P4Info and target-specific device config.

- p4switch: the embedded compiler (`p4switch.compiler.compile_program`); the device config is the
  bundle `CompiledProgram.device_config()` returns, the P4Info is built from its control-plane model.
- bmv2: `p4c-bm2-ss --arch v1model --p4runtime-files X.p4info.txt -o X.json X.p4` (`.txt`: the
  text format every p4c version recognises; `.txtpb` only newer ones); the device config is the
  BMv2 JSON.

The cookie identifies the artefacts (a hash of both), so a re-run can tell that a switch already
runs this exact pipeline and leave its state alone.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

TARGETS = ("p4switch", "bmv2")


class PipelineError(RuntimeError):
    """The program could not be turned into pipeline artefacts for the target."""


@dataclass(frozen=True)
class TargetTraits:
    """What the controller must know about a target's P4Runtime server and data plane."""

    # A packet that hits an action-selector group whose members are all deactivated (watch ports
    # down) kills the switch: PI on BMv2 divides by the number of active members.
    group_needs_live_member: bool = False
    # Group reads give every member the watch port of the group's last member (PI f96af95,
    # `DeviceMgrImp::action_profile_group_read`), so read-back watch ports cannot be compared.
    group_reads_lose_watch_ports: bool = False


P4SWITCH_TRAITS = TargetTraits()
TARGET_TRAITS = {
    "p4switch": P4SWITCH_TRAITS,
    "bmv2": TargetTraits(group_needs_live_member=True, group_reads_lose_watch_ports=True),
}


@dataclass
class Pipeline:
    program: Path
    target: str
    p4info: p4info_pb2.P4Info
    device_config: bytes

    @property
    def cookie(self) -> int:
        digest = hashlib.sha256(self.p4info.SerializeToString(deterministic=True)
                                + self.device_config).digest()
        return int.from_bytes(digest[:8], "big") >> 1  # fits int64 readers too

    @property
    def traits(self) -> TargetTraits:
        return TARGET_TRAITS[self.target]


def build_pipeline(program: str | Path, target: str, *,
                   include_dirs: list[str | Path] | None = None) -> Pipeline:
    """Compile `program` for `target` ("p4switch" or "bmv2")."""
    path = Path(program)
    if not path.is_file():
        raise PipelineError(f"P4 program {path} does not exist")
    if target == "p4switch":
        return _p4switch(path, include_dirs or [])
    if target == "bmv2":
        return _bmv2(path, include_dirs or [])
    raise PipelineError(f"unknown target {target!r}; choose one of: {', '.join(TARGETS)}")


def _p4switch(path: Path, include_dirs: list[str | Path]) -> Pipeline:
    try:
        from p4switch.compiler import P4CompileError, compile_program
        from p4switch.p4info import build_p4info
    except ImportError as err:
        raise PipelineError(f"the p4switch compiler is not available ({err})") from None

    try:
        compiled = compile_program(path, include_dirs=include_dirs)
    except P4CompileError as err:
        raise PipelineError(f"p4switch cannot compile {path}:\n{err}") from None
    return Pipeline(path, "p4switch", build_p4info(compiled.model), compiled.device_config())


def bmv2_compile_argv(path: Path, outdir: Path, include_dirs: list[str | Path]) -> list[str]:
    stem = path.stem
    argv = ["p4c-bm2-ss", "--arch", "v1model", "--std", "p4-16",
            "--p4runtime-files", str(outdir / f"{stem}.p4info.txt"),
            "-o", str(outdir / f"{stem}.json")]
    for inc in include_dirs:
        argv += ["-I", str(inc)]
    return [*argv, str(path)]


def _bmv2(path: Path, include_dirs: list[str | Path]) -> Pipeline:
    if shutil.which("p4c-bm2-ss") is None:
        raise PipelineError("target bmv2 needs p4c-bm2-ss on PATH (install p4c)")
    with tempfile.TemporaryDirectory(prefix="fabric-lab-p4c-") as tmp:
        outdir = Path(tmp)
        argv = bmv2_compile_argv(path, outdir, include_dirs)
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise PipelineError(f"p4c-bm2-ss failed on {path} (exit {done.returncode}):\n"
                                f"{done.stderr.strip() or done.stdout.strip()}")
        p4info = text_format.Parse((outdir / f"{path.stem}.p4info.txt").read_text(),
                                   p4info_pb2.P4Info())
        device_config = (outdir / f"{path.stem}.json").read_bytes()
    return Pipeline(path, "bmv2", p4info, device_config)


def resolve_target(target: str) -> str:
    """`auto` is p4switch, the embedded default target, everywhere in the lab (the same as
    `topos.mininet.targets.select_target`); BMv2 only when asked for by name."""
    if target == "auto":
        return "p4switch"
    if target not in TARGETS:
        raise PipelineError(f"unknown target {target!r}; choose auto or one of: "
                            f"{', '.join(TARGETS)}")
    return target
