"""A long-lived runtime CLI session against a real `simple_switch_grpc` (no interfaces, free
TCP ports, so it meets no other switch). Skipped where BMv2 is not installed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from controller.pfc_agent import RuntimeChannel, RuntimeChannelError
from controller.queues import CliSession, RuntimeCliError

pytestmark = [pytest.mark.bmv2, pytest.mark.timeout(120)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def thrift_port(tmp_path) -> Iterator[int]:
    thrift, grpc = _free_port(), _free_port()
    log = (tmp_path / "switch.log").open("w")
    proc = subprocess.Popen(["simple_switch_grpc", "--no-p4", "--thrift-port", str(thrift),
                             "--", "--grpc-server-addr", f"127.0.0.1:{grpc}",
                             "--priority-queues", "8"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:  # readiness: the Thrift port accepts
            try:
                socket.create_connection(("127.0.0.1", thrift), 0.2).close()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "switch.log").read_text()
                assert time.monotonic() < deadline, "simple_switch_grpc did not listen"
                time.sleep(0.05)
        yield thrift
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_session_runs_commands_reports_errors_and_restarts(thrift_port: int) -> None:
    session = CliSession("bmv2", thrift_port)
    try:
        assert session.command("set_queue_rate 100 1 3") == ""
        assert "set_queue_rate <rate_pps>" in session.command("help set_queue_rate")
        with pytest.raises(RuntimeCliError, match="Bad format for rate_pps"):
            session.command("set_queue_rate fast 1 3")
        assert session.batch(["set_queue_depth 10 1 3", "set_queue_rate 0 1 3"]) == ""
        first = session._proc.pid
        os.kill(first, signal.SIGKILL)  # the CLI dies: the next command starts another
        session._proc.wait()
        assert session.command("set_queue_rate 100 1 3") == ""
        assert session._proc.pid != first
    finally:
        session.close()
    assert session._proc is None


def test_channel_turns_cli_errors_into_channel_errors(thrift_port: int) -> None:
    channel = RuntimeChannel("bmv2", thrift_port)
    try:
        channel.command("set_queue_rate 250 2 3")
        with pytest.raises(RuntimeChannelError, match="Bad format"):
            channel.command("set_queue_depth deep 2 3")
    finally:
        channel.close()


def test_session_without_a_switch_says_why() -> None:
    port = _free_port()  # nothing listens there
    session = CliSession("bmv2", port)
    with pytest.raises(RuntimeCliError, match=f"runtime CLI on port {port} closed"):
        session.command("help")
    assert session._proc is None  # nothing left running
