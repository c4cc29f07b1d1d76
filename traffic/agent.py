"""Controller side of `traffic.worker`: start workers (`python -m traffic worker`) in hosts and
run sends/receives in them."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from topos.errors import FabricLabError
from topos.mininet.procs import wait_readable
from traffic.hosts import Host, python_argv

START_S_PER_WORKER = 0.25  # start_many's deadline grows by this per worker (~0.2 s CPU each)


class AgentError(FabricLabError, RuntimeError):
    pass


class Agent:
    """One worker process in one host; runs one send or receive at a time."""

    def __init__(self, host: Host, start_timeout: float | None = 20.0) -> None:
        """Start the worker and wait until it is ready (`start_timeout` None: do not wait,
        call `expect("ready", ...)` later; `start_many` does so for many at once)."""
        self.host = host
        # a file, not a pipe: a full pipe would stall the worker
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self.proc = host.popen(python_argv("traffic", "worker"), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=self._err, bufsize=0)
        except BaseException:
            self._err.close()
            raise
        self._buf = b""
        if start_timeout is not None:
            try:
                self.expect("ready", start_timeout)
            except BaseException:
                self.close()
                raise

    @classmethod
    def start_many(cls, hosts: Sequence[Host], timeout: float = 20.0) -> list[Agent]:
        """One worker per entry of `hosts`, all started before any is waited for; ready within
        `timeout` + START_S_PER_WORKER per worker, or all are closed and AgentError raised."""
        agents: list[Agent] = []
        try:
            for host in hosts:
                agents.append(cls(host, start_timeout=None))
            deadline = time.monotonic() + timeout + START_S_PER_WORKER * len(agents)
            for agent in agents:
                agent._expect_by("ready", deadline)
        except BaseException:
            for agent in agents:
                agent.close()
            raise
        return agents

    def _line(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AgentError(f"{self.host.name}: worker did not answer in time")
            if wait_readable(fd, left):
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self.proc.wait()
                    err = self.stderr()
                    raise AgentError(f"{self.host.name}: worker exited: {err.strip()[-2000:]}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read().decode(errors="replace")

    def expect(self, event: str, timeout: float) -> dict[str, Any]:
        return self._expect_by(event, time.monotonic() + timeout)

    def _expect_by(self, event: str, deadline: float) -> dict[str, Any]:
        msg = self._line(deadline)
        if msg.get("event") == "error":
            raise AgentError(f"{self.host.name}: {msg.get('message')}")
        if msg.get("event") != event:
            raise AgentError(f"{self.host.name}: expected {event}, got {msg}")
        return msg

    def request(self, op: str, config: dict[str, Any] | Any) -> None:
        """Send a request; `config` is a dict or a SenderConfig/ReceiverConfig."""
        if dataclasses.is_dataclass(config) and not isinstance(config, type):
            config = dataclasses.asdict(config)
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"op": op, "config": config}) + "\n").encode())

    def start_recv(self, config: dict[str, Any] | Any, timeout: float = 10.0) -> None:
        """Start a receive and return once its socket is open."""
        self.request("recv", config)
        self.expect("ready", timeout)

    def start_send(self, config: dict[str, Any] | Any) -> None:
        self.request("send", config)

    def result(self, timeout: float = 120.0) -> dict[str, Any]:
        return self.expect("result", timeout)["result"]

    def interrupt(self) -> None:
        """End the current run early (it still reports its result)."""
        self.proc.send_signal(signal.SIGTERM)

    def close(self, timeout: float = 5.0) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.close()
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.terminate()
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self._err.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
