"""Queue settings through the switches' runtime CLI, the one thing P4Runtime cannot reach.

The same simple_switch_CLI commands work on both targets: `set_queue_depth <pkts> [<port>
[<prio>]]` and `set_queue_rate <pps> [<port> [<prio>]]` (without a port: every queue). The
commands go on stdin of `simple_switch_CLI` (BMv2) or `p4switch-cli` (p4switch), started from an
argv list with the switch's runtime CLI (Thrift) port.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from topos.model import FabricSpec

CLI_PROGRAMS = {"p4switch": "p4switch-cli", "bmv2": "simple_switch_CLI"}


class RuntimeCliError(RuntimeError):
    pass


def runtime_cli_argv(target: str, thrift_port: int) -> list[str]:
    try:
        program = CLI_PROGRAMS[target]
    except KeyError:
        raise RuntimeCliError(f"no runtime CLI for target {target!r}") from None
    beside = Path(sys.executable).parent / program  # the project's venv
    path = shutil.which(program) or (str(beside) if beside.exists() else None)
    if path is None:
        raise RuntimeCliError(f"{program} not found on PATH")
    return [path, "--thrift-port", str(thrift_port)]


def run_commands(target: str, thrift_port: int, commands: Sequence[str],
                 timeout: float = 30.0) -> str:
    """Run runtime CLI commands on one switch; raise RuntimeCliError naming the failures."""
    argv = runtime_cli_argv(target, thrift_port)
    done = subprocess.run(argv, input="\n".join(commands) + "\n", capture_output=True,
                          text=True, timeout=timeout, check=False)
    output = done.stdout + done.stderr
    errors = [line for line in output.splitlines() if line.strip().startswith("Error")]
    if done.returncode != 0 or errors:
        raise RuntimeCliError(f"{' '.join(argv)} failed (exit {done.returncode}):\n"
                              + "\n".join(errors or output.splitlines()[-5:]))
    return done.stdout


def queue_commands(depth: int | None = None, rate_pps: int | None = None,
                   ports: Sequence[int] = ()) -> list[str]:
    """set_queue_depth / set_queue_rate commands for `ports` (every queue when empty)."""
    for name, value in (("depth", depth), ("rate", rate_pps)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ValueError(f"queue {name} must be an integer >= 0, not {value!r}")
    commands = []
    for name, value in (("set_queue_depth", depth), ("set_queue_rate", rate_pps)):
        if value is None:
            continue
        commands += [f"{name} {value} {port}" for port in ports] or [f"{name} {value}"]
    return commands


def configure_queues(spec: FabricSpec, target: str, *, depth: int | None = None,
                     rate_pps: int | None = None, switches: Sequence[str] | None = None) -> None:
    """Apply one queue depth and/or rate to every port of the named switches (default: all)."""
    commands = queue_commands(depth, rate_pps)
    if not commands:
        return
    failures = []
    for name in switches if switches is not None else [s.name for s in spec.switches]:
        try:
            run_commands(target, spec.switch(name).thrift_port, commands)
        except (RuntimeCliError, subprocess.TimeoutExpired) as err:
            failures.append(f"switch {name}: {err}")
    if failures:
        raise RuntimeCliError("\n".join(failures))
