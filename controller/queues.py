"""Queue settings through the switches' runtime CLI, the one thing P4Runtime cannot reach.

The same simple_switch_CLI commands work on both targets: `set_queue_depth <pkts> [<port>
[<prio>]]` and `set_queue_rate <pps> [<port> [<prio>]]` (without a port: every queue). The
commands go on stdin of `simple_switch_CLI` (BMv2) or `p4switch-cli` (p4switch), started from an
argv list with the switch's runtime CLI (Thrift) port.

`run_commands` starts one CLI process per call (~0.3-0.5 s for `simple_switch_CLI`, most of it
Python start-up and fetching the switch's JSON). `CliSession` keeps one process open and talks
to it over its stdin/stdout, up to the next `RuntimeCmd: ` prompt: well under a millisecond per
command, which is what BMv2's pause agent and telemetry need. The CLI reads the pipeline's JSON
when it starts, so open a session after the pipeline is set (and reopen it after a new one).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
import threading
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
    errors = cli_errors(output)
    if done.returncode != 0 or errors:
        raise RuntimeCliError(f"{' '.join(argv)} failed (exit {done.returncode}):\n"
                              + "\n".join(errors or output.splitlines()[-5:]))
    return done.stdout


def cli_errors(output: str) -> list[str]:
    """The lines of runtime-CLI output that report a failed command (BMv2's CLI prints
    `Error: ...` or `Invalid ...` and carries on)."""
    return [line for line in output.splitlines()
            if line.strip().startswith(("Error", "Invalid"))]


class CliSession:
    """One long-lived runtime CLI process on a switch; `command(line)` returns its output or
    raises RuntimeCliError. Thread-safe; a CLI that exited is started again by the next command."""

    PROMPT = b"RuntimeCmd: "

    def __init__(self, target: str, thrift_port: int, timeout: float = 10.0) -> None:
        self.target, self.port, self.timeout = target, thrift_port, timeout
        self._proc: subprocess.Popen | None = None
        self._buffer = b""
        self._lock = threading.Lock()

    def _start(self) -> None:
        argv = runtime_cli_argv(self.target, self.port)
        env = dict(os.environ, PYTHONUNBUFFERED="1")  # output reaches the pipe at once
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, env=env)
        self._buffer = b""
        try:
            self._read_to_prompt()  # banner and the JSON fetch
        except RuntimeCliError:
            self._stop()
            raise

    def _read_to_prompt(self) -> str:
        fd = self._proc.stdout.fileno()
        while self.PROMPT not in self._buffer:
            ready, _, _ = select.select([fd], [], [], self.timeout)
            chunk = os.read(fd, 65536) if ready else None
            if not chunk:
                text = self._buffer.decode(errors="replace").strip()
                why = "closed" if chunk == b"" else f"no prompt within {self.timeout:g} s"
                self._stop()
                raise RuntimeCliError(f"{self.target} runtime CLI on port {self.port} {why}"
                                      + (f":\n{text}" if text else ""))
            self._buffer += chunk
        out, _, self._buffer = self._buffer.partition(self.PROMPT)
        return out.decode(errors="replace")

    def command(self, line: str) -> str:
        if "\n" in line:
            raise ValueError(f"one command per call, got {line!r}")
        with self._lock:
            if self._proc is not None and self._proc.poll() is not None:
                self._stop()  # the CLI exited since the last command: start another
            if self._proc is None:
                self._start()
            try:
                self._proc.stdin.write(line.encode() + b"\n")
                self._proc.stdin.flush()
            except OSError as err:
                self._stop()
                raise RuntimeCliError(f"runtime CLI on port {self.port}: {err}") from None
            out = self._read_to_prompt()
        errors = cli_errors(out)
        if errors:
            raise RuntimeCliError(f"{line!r} on port {self.port}: {'; '.join(errors)}")
        return out

    def batch(self, lines: Sequence[str]) -> str:
        return "".join(self.command(line) for line in lines)

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(2)  # end of input: the CLI exits by itself
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()

    def close(self) -> None:
        with self._lock:
            self._stop()


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
