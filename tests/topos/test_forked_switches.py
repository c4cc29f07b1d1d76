"""Real p4switch processes forked by the fork server (`topos.mininet.forked`): they serve
P4Runtime, report their exit status like exec'd ones, and never outlive the server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from targets import P4SWITCH
from tests.ports import loose_port
from topos.mininet.forked import ForkServerClient
from topos.mininet.nodes import grpc_listening
from topos.mininet.procs import stop_child, wait_gone

pytestmark = pytest.mark.skipif(not P4SWITCH.available(), reason="p4switch not installed")


def switch_argv(device_id: int) -> tuple[list[str], int]:
    grpc_port = loose_port()
    return (["p4switch", "--no-p4", "--device-id", str(device_id), "--thrift-port",
             str(loose_port()), "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}"], grpc_port)


def wait_listening(proc, port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not grpc_listening(port):
        assert proc.poll() is None, f"exited with {proc.returncode}"
        assert time.monotonic() < deadline, "not listening in time"
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.02)  # poll interval; returns at once on exit


@pytest.fixture
def server():
    argv = P4SWITCH.forkserver_argv()
    assert argv is not None and argv[1:] == ["-m", "p4switch.switch.forkserver"]
    fs = ForkServerClient(argv)
    yield fs
    fs.close()


def test_forked_switches_serve_and_stop_like_started_ones(server, tmp_path):
    started = []
    for device_id in (1, 2, 3):
        argv, port = switch_argv(device_id)
        started.append((server.launch(argv, tmp_path / f"s{device_id}.log"), port, device_id))
    for proc, port, device_id in started:
        wait_listening(proc, port)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(),
                                     timeout=5).p4runtime_api_version == "1.3.0"
            req = p4runtime_pb2.ReadRequest(device_id=device_id)
            req.entities.add().table_entry.table_id = 0
            with pytest.raises(grpc.RpcError) as err:  # no pipeline yet, as an exec'd one
                list(stub.Read(req, timeout=5))
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        # its own session, so the node's process-group signals reach it alone
        stat = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(stat[3]) == proc.pid  # process group
        assert int(stat[1]) == server.pid  # parent: the fork server
        assert Path(f"/proc/{proc.pid}/comm").read_text().strip() == "p4switch"
    first, second, third = (p for p, _, _ in started)
    assert stop_child(first, 5.0) == 0  # SIGTERM to its group: a clean exit
    assert not grpc_listening(started[0][1])
    second.kill()
    assert second.wait(5) == -signal.SIGKILL
    with pytest.raises(subprocess.TimeoutExpired):
        third.wait(0.05)
    server.close()  # stops the one still running
    assert third.poll() == 0 and wait_gone(third.pid, 1.0)


def test_a_bad_command_line_exits_2_with_the_error_in_its_log(server, tmp_path):
    log = tmp_path / "bad.log"
    proc = server.launch(["p4switch", "--no-such-option"], log)
    assert proc.wait(10) == 2
    assert "p4switch: error: unrecognized arguments: --no-such-option" in log.read_text()


def test_switches_die_with_the_server(tmp_path):
    fs = ForkServerClient(P4SWITCH.forkserver_argv())
    try:
        argv, port = switch_argv(7)
        proc = fs.launch(argv, tmp_path / "s.log")
        wait_listening(proc, port)
        os.kill(fs.pid, signal.SIGKILL)  # the server dies without stopping anything
        assert wait_gone(proc.pid, 5.0)
        assert proc.wait(5) == -signal.SIGKILL
    finally:
        fs.close()


def test_malformed_requests_are_refused_and_the_server_goes_on(tmp_path):
    server = subprocess.Popen([*P4SWITCH.forkserver_argv()], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        for line in ('{"argv": 5, "log": "x"}', "not json", '{"log": "x"}'):
            server.stdin.write(line + "\n")
            server.stdin.flush()
            reply = json.loads(server.stdout.readline())
            assert reply["error"].startswith("bad request: "), reply
        log = tmp_path / "ok.log"
        server.stdin.write(json.dumps({"argv": ["--help"], "log": str(log)}) + "\n")
        server.stdin.flush()
        pid = json.loads(server.stdout.readline())["pid"]
        assert json.loads(server.stdout.readline()) == {"exited": pid, "status": 0}
        assert log.read_text().strip()
    finally:
        server.stdin.close()
        assert server.wait(10) == 0
