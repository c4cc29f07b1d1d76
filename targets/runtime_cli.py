"""The runtime CLI of a running switch: simple_switch_CLI's commands (`set_queue_rate`,
`register_read`, `counter_read`, `queue_stats`, ...), one client for every target.

`Target.cli(thrift_port)` gives the client that fits the target:
- **SocketCli** (p4switch): the switch serves the commands itself on `127.0.0.1:<thrift port>`
  as JSON lines (`{"ok": ..., "output": ...}` per command), cheap enough to poll every 100 ms.
- **ProcessCli** (BMv2): one long-lived `simple_switch_CLI`, commands on its stdin, output up to
  the next `RuntimeCmd: ` prompt: well under a millisecond per command once started (a fresh
  CLI per command takes ~0.3-0.5 s, most of it Python start-up and fetching the switch's JSON).
  The CLI reads the pipeline's JSON when it starts, so open it after the pipeline is set (and
  reopen it after a new one).

Both connect on the first command or on `connect()`, are thread-safe, and raise
RuntimeCliError naming the command and the switch's CLI port when a command fails or the
switch cannot be reached:

    with target.cli(sw.thrift_port) as cli:
        cli.batch(["set_queue_depth 64 1", "set_queue_rate 1000 1"])
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import socket
import subprocess
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

from topos.errors import FabricLabError
from topos.mininet.procs import spawn


class RuntimeCliError(FabricLabError, RuntimeError):
    """A runtime-CLI command failed, or the switch's CLI could not be reached."""


def cli_errors(output: str) -> list[str]:
    """The lines of runtime-CLI output that report a failed command (BMv2's CLI prints
    `Error: ...` or `Invalid ...` and carries on)."""
    return [line for line in output.splitlines()
            if line.strip().startswith(("Error", "Invalid"))]


class RuntimeCli(ABC):
    """One switch's runtime CLI: `command(line)` returns the output or raises RuntimeCliError."""

    def __init__(self, thrift_port: int, timeout: float) -> None:
        self.port, self.timeout = thrift_port, timeout
        self._lock = threading.Lock()

    @abstractmethod
    def _connect(self) -> None:
        """Connect when not connected (the lock held)."""

    @abstractmethod
    def _send(self, line: str) -> str:
        """Run one command (the lock held), connecting first when not connected."""

    @abstractmethod
    def _disconnect(self) -> None:
        """Drop the connection (the lock held); the next command connects again."""

    def connect(self) -> RuntimeCli:
        """Connect now rather than on the first command (BMv2's CLI takes ~0.5 s to start,
        seconds on a busy machine); RuntimeCliError if the switch cannot be reached."""
        with self._lock:
            self._connect()
        return self

    def command(self, line: str) -> str:
        if "\n" in line:
            raise ValueError(f"one command per call, got {line!r}")
        with self._lock:
            return self._send(line)

    def batch(self, lines: Sequence[str]) -> str:
        """Several commands in order, their non-empty outputs one after the other (lines
        joined by newlines); stops at the first failure."""
        outputs = [self.command(line).rstrip("\n") for line in lines]
        return "\n".join(out for out in outputs if out)

    def queue_stats(self, port: int, priority: int) -> dict[str, int | bool]:
        """`queue_stats` of a traffic manager that reports them (`Capabilities.reports_tm_stats`):
        depth, enqueued, dequeued, dropped, paused."""
        words = self.command(f"queue_stats {port} {priority}").split()
        stats: dict[str, int | bool] = {}
        for key, value in zip(words[4::2], words[5::2], strict=False):
            stats[key] = value == "True" if key == "paused" else int(value)
        return stats

    def close(self) -> None:
        with self._lock:
            self._disconnect()

    def __enter__(self) -> RuntimeCli:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SocketCli(RuntimeCli):
    """A switch that serves its runtime CLI itself, as JSON lines on 127.0.0.1:<thrift port>."""

    def __init__(self, thrift_port: int, timeout: float = 5.0) -> None:
        super().__init__(thrift_port, timeout)
        self._sock: socket.socket | None = None
        self._file: io.BufferedIOBase | None = None  # set and cleared together with _sock

    def _connect(self) -> None:
        if self._sock is None:
            try:
                self._sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
            except OSError as err:
                raise RuntimeCliError(f"runtime CLI on port {self.port}: {err}") from None
            self._file = self._sock.makefile("rwb")

    def _send(self, line: str) -> str:
        self._connect()
        assert self._file is not None  # opened together with the socket
        try:
            self._file.write(line.encode() + b"\n")
            self._file.flush()
            raw = self._file.readline()
        except OSError as err:
            self._disconnect()
            raise RuntimeCliError(f"runtime CLI on port {self.port}: {err}") from None
        if not raw:
            self._disconnect()
            raise RuntimeCliError(f"runtime CLI on port {self.port} closed")
        reply = json.loads(raw)
        if not reply["ok"]:
            raise RuntimeCliError(f"{line!r} on port {self.port}: Error: {reply['output']}")
        return reply["output"]

    def _disconnect(self) -> None:
        if self._sock is not None:
            assert self._file is not None  # opened together with the socket
            self._file.close()
            self._sock.close()
        self._sock = self._file = None


class ProcessCli(RuntimeCli):
    """One long-lived CLI program (`argv`, e.g. simple_switch_CLI --thrift-port N) talked to
    over its stdin/stdout; a CLI that exited is started again by the next command. It ends with
    the process that started it (`spawn`: a parent-death signal), however that one ends."""

    PROMPT = b"RuntimeCmd: "

    def __init__(self, argv: Sequence[str], thrift_port: int, timeout: float = 10.0) -> None:
        super().__init__(thrift_port, timeout)
        self.argv = list(argv)
        self._proc: subprocess.Popen | None = None
        self._buffer = b""

    def _start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")  # output reaches the pipe at once
        try:
            self._proc = spawn(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env)
        except OSError as err:
            raise RuntimeCliError(f"runtime CLI on port {self.port}: cannot start "
                                  f"{Path(self.argv[0]).name}: {err}") from None
        self._buffer = b""
        self._read_to_prompt()  # banner and the JSON fetch

    def _read_to_prompt(self) -> str:
        assert self._proc is not None and self._proc.stdout is not None  # _start(): stdout=PIPE
        fd = self._proc.stdout.fileno()
        while self.PROMPT not in self._buffer:
            ready, _, _ = select.select([fd], [], [], self.timeout)
            chunk = os.read(fd, 65536) if ready else None
            if not chunk:
                text = self._buffer.decode(errors="replace").strip()
                why = "closed" if chunk == b"" else f"no prompt within {self.timeout:g} s"
                self._disconnect()
                raise RuntimeCliError(f"runtime CLI on port {self.port} {why}"
                                      + (f":\n{text}" if text else ""))
            self._buffer += chunk
        out, _, self._buffer = self._buffer.partition(self.PROMPT)
        return out.decode(errors="replace")

    def _connect(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            self._disconnect()  # the CLI exited since the last command: start another
        if self._proc is None:
            self._start()

    def _send(self, line: str) -> str:
        self._connect()
        proc = self._proc
        assert proc is not None and proc.stdin is not None  # _start() set it, with stdin=PIPE
        try:
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
        except OSError as err:
            self._disconnect()
            raise RuntimeCliError(f"runtime CLI on port {self.port}: {err}") from None
        out = self._read_to_prompt()
        errors = cli_errors(out)
        if errors:
            raise RuntimeCliError(f"{line!r} on port {self.port}: {'; '.join(errors)}")
        return out

    def _disconnect(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None  # _start(): both are pipes
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
