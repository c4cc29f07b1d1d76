"""Controller side of `traffic.worker`: start workers (`python -m traffic worker`) in hosts and
run sends/receives in them."""

from __future__ import annotations

import dataclasses
import signal
import time
from collections.abc import Sequence
from typing import Any

from topos.errors import FabricLabError
from topos.mininet.procs import LineChild
from traffic.hosts import Host, python_argv

START_S_PER_WORKER = 0.25  # start_many's deadline grows by this per worker (~0.2 s CPU each)


class AgentError(FabricLabError, RuntimeError):
    pass


class Agent(LineChild):
    """One worker process in one host; runs one send or receive at a time."""

    def __init__(self, host: Host, start_timeout: float | None = 20.0) -> None:
        """Start the worker and wait until it is ready (`start_timeout` None: do not wait,
        call `expect("ready", ...)` later; `start_many` does so for many at once)."""
        self.host = host
        super().__init__(host.popen, python_argv("traffic", "worker"), f"{host.name}: worker",
                         AgentError)
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
                agent.expect_by("ready", deadline)
        except BaseException:
            for agent in agents:
                agent.close()
            raise
        return agents

    def request(self, op: str, config: dict[str, Any] | Any) -> None:
        """Send a request; `config` is a dict or a SenderConfig/ReceiverConfig."""
        if dataclasses.is_dataclass(config) and not isinstance(config, type):
            config = dataclasses.asdict(config)
        self.send({"op": op, "config": config})

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

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
