"""BMv2: `simple_switch_grpc` started with `--no-p4`, programs compiled by `p4c-bm2-ss`, its
runtime CLI one long-lived `simple_switch_CLI` per client.

`p4c-bm2-ss --arch v1model --p4runtime-files X.p4info.txt -o X.json X.p4` (`.txt`: the text
format every p4c version recognises; `.txtpb` only newer ones); the device config is the BMv2
JSON. Target options (`--cpu-port`, `--priority-queues`) go after `--`.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from targets.base import Capabilities, Compiled, CompileError, Target, TargetUnavailable
from targets.programs import find_program
from targets.runtime_cli import ProcessCli, RuntimeCli, RuntimeCliError

COMPILER = "p4c-bm2-ss"
CLI_PROGRAM = "simple_switch_CLI"


@dataclass(frozen=True)
class Bmv2Target(Target):
    target_options_after_separator = True

    def with_queues(self, priority_queues: int, pause_link_mbps: float) -> Target:
        """BMv2's queues do not pause (the controller's pause agent slows them instead), so the
        pause rate is not the switch's business."""
        return self.with_options("--priority-queues", str(priority_queues))

    @staticmethod
    def compile_argv(program: Path, outdir: Path, include_dirs: Sequence[str | Path]) -> list[str]:
        argv = [COMPILER, "--arch", "v1model", "--std", "p4-16",
                "--p4runtime-files", str(outdir / f"{program.stem}.p4info.txt"),
                "-o", str(outdir / f"{program.stem}.json")]
        for inc in include_dirs:
            argv += ["-I", str(inc)]
        return [*argv, str(program)]

    def compile(self, program: Path, include_dirs: Sequence[str | Path] = ()) -> Compiled:
        from google.protobuf import text_format
        from p4.config.v1 import p4info_pb2

        compiler = find_program(COMPILER)
        if compiler is None:
            raise TargetUnavailable(f"target bmv2 needs {COMPILER} on PATH (install p4c)")
        with tempfile.TemporaryDirectory(prefix="fabric-lab-p4c-") as tmp:
            outdir = Path(tmp)
            argv = [compiler, *self.compile_argv(program, outdir, include_dirs)[1:]]
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise CompileError(f"{COMPILER} failed on {program} (exit {done.returncode}):\n"
                                   f"{done.stderr.strip() or done.stdout.strip()}")
            p4info = text_format.Parse((outdir / f"{program.stem}.p4info.txt").read_text(),
                                       p4info_pb2.P4Info())
            device_config = (outdir / f"{program.stem}.json").read_bytes()
        return Compiled(p4info, device_config)

    def cli(self, thrift_port: int, timeout: float = 10.0) -> RuntimeCli:
        program = find_program(CLI_PROGRAM)
        if program is None:
            raise RuntimeCliError(f"{CLI_PROGRAM} not found on PATH")
        return ProcessCli([program, "--thrift-port", str(thrift_port)], thrift_port, timeout)


BMV2 = Bmv2Target(
    "bmv2", ("simple_switch_grpc",), requires=("simple_switch_grpc", COMPILER),
    caps=Capabilities(group_needs_live_member=True, group_reads_lose_watch_ports=True))
