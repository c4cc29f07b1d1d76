"""A p4switch process for tests: free ports, readiness by TCP probe, SIGTERM then SIGKILL."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.ports import loose_port
from topos.mininet.procs import accepts

P4SWITCH = str(Path(sys.executable).parent / "p4switch")


def listening(port: int) -> bool:
    return accepts(port)


@dataclass
class SwitchProc:
    proc: subprocess.Popen
    grpc_port: int
    device_id: int
    thrift_port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


@contextlib.contextmanager
def p4switch(device_id: int = 1, ports: tuple[str, ...] = (),
             timeout: float = 20.0) -> Iterator[SwitchProc]:
    """Run `p4switch --no-p4` with interfaces `ports` ("1@veth0", ...) until the block ends."""
    grpc_port, thrift_port = loose_port(), loose_port()
    argv = [P4SWITCH, "--device-id", str(device_id), "--thrift-port", str(thrift_port),
            "--cpu-port", "510"]
    for spec in ports:
        argv += ["-i", spec]
    argv += ["--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not listening(grpc_port):
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                raise RuntimeError(f"p4switch exited with {proc.returncode}: {out}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"p4switch not listening on {grpc_port} after {timeout} s")
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        yield SwitchProc(proc, grpc_port, device_id, thrift_port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
