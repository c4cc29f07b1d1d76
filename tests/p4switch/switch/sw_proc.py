"""Start a p4switch process for a test and stop it cleanly (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.ports import loose_port
from topos.mininet.procs import accepts

REPO = Path(__file__).resolve().parents[3]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> float:
    """Seconds until 127.0.0.1:port accepts a connection; fails if the process exits."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"p4switch exited with {proc.returncode}")
        if accepts(port):
            return time.monotonic() - start
        time.sleep(0.01)
    raise TimeoutError(f"p4switch did not listen on {port} within {timeout} s")


class SwitchProcess:
    def __init__(self, args: list[str], *, grpc_port: int | None = None,
                 thrift_port: int | None = None, log: bool = False):
        self.grpc_port = grpc_port or loose_port()
        self.thrift_port = thrift_port or loose_port()
        self.addr = f"127.0.0.1:{self.grpc_port}"
        argv = [sys.executable, "-m", "p4switch.cli.switch", "--thrift-port",
                str(self.thrift_port), *args]
        if log:
            argv.insert(3, "--log-console")
        if "--" not in args:
            argv.append("--")
        argv += ["--grpc-server-addr", self.addr]
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives as long as the switch
        self.proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                     stderr=self._log, text=True)
        try:
            self.startup_s = wait_port(self.grpc_port, self.proc)
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"{exc}\n{self.stderr()}") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def command(self, *argv: str) -> str:
        """One runtime-channel command's output (p4switch.cli.runtime_cli)."""
        done = subprocess.run([sys.executable, "-m", "p4switch.cli.runtime_cli", "--thrift-port",
                               str(self.thrift_port), *argv], cwd=REPO, capture_output=True,
                              text=True, timeout=30, check=False,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def stderr(self) -> str:
        """Everything the switch logged so far."""
        self._log.seek(0)
        return self._log.read()

    def __enter__(self) -> SwitchProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
