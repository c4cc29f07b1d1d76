"""p4switch, the lab's embedded v1model switch: compiled in-process, started as `p4switch`,
its runtime CLI served by the switch itself, PFC pauses honoured by its traffic manager."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from targets.base import Capabilities, Compiled, CompileError, Target, TargetUnavailable
from targets.programs import find_program
from targets.runtime_cli import RuntimeCli, SocketCli


@dataclass(frozen=True)
class P4SwitchTarget(Target):
    """Every option goes before `--`; the device config is the bundle
    `CompiledProgram.device_config()` returns, the P4Info built from its control-plane model."""

    def forkserver_argv(self) -> list[str] | None:
        """`p4switch.switch.forkserver` under the interpreter of the `p4switch` command (its #!
        line), so forked switches run the same code; None when that is not a Python script."""
        path = find_program(self.command[0])
        try:
            with open(path or "", "rb") as script:
                first = script.readline(512)
        except OSError:
            return None
        python = first[2:].strip().decode(errors="replace") if first.startswith(b"#!") else ""
        if " " in python or not Path(python).name.startswith("python"):
            return None
        return [python, "-m", "p4switch.switch.forkserver"]

    def group_argv(self, argvs: Sequence[Sequence[str]]) -> list[str]:
        """One process serving several switches: their `argv` command lines, options joined by
        `::` (p4switch.switch.options)."""
        from p4switch.switch.options import GROUP_SEPARATOR

        skip = len(self.command)
        group = list(argvs[0])
        for argv in argvs[1:]:
            group += [GROUP_SEPARATOR, *argv[skip:]]
        return group

    def with_queues(self, priority_queues: int, pause_link_mbps: float) -> Target:
        return self.with_options("--priority-queues", str(priority_queues),
                                 "--pfc-link-mbps", f"{pause_link_mbps:g}")

    def without_queue_pause(self) -> Target:
        return self.with_options("--no-pfc")

    def compile(self, program: Path, include_dirs: Sequence[str | Path] = ()) -> Compiled:
        try:
            from p4switch.compiler import P4CompileError, compile_program
            from p4switch.p4info import build_p4info
        except ImportError as err:
            raise TargetUnavailable(f"the p4switch compiler is not available ({err})") from None
        try:
            compiled = compile_program(program, include_dirs=list(include_dirs))
        except P4CompileError as err:
            raise CompileError(f"p4switch cannot compile {program}:\n{err}") from None
        return Compiled(build_p4info(compiled.model), compiled.device_config())

    def cli(self, thrift_port: int, timeout: float = 10.0) -> RuntimeCli:
        return SocketCli(thrift_port, timeout)

    def versions(self) -> dict[str, str]:
        """p4switch is the lab's own package."""
        try:
            return {"p4switch": importlib.metadata.version("ai-fabric-lab")}
        except importlib.metadata.PackageNotFoundError:
            return {"p4switch": "not installed"}


P4SWITCH = P4SwitchTarget(
    "p4switch", ("p4switch",), requires=("p4switch",),
    caps=Capabilities(can_pause_queues=True, reports_tm_stats=True, serves_runtime_cli=True,
                      serves_several_switches=True))
