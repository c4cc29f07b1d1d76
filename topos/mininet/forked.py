"""Switch processes forked by a fork server (`p4switch.switch.forkserver`) instead of exec'd.

`ForkServerClient(argv)` starts the server (through `spawn`: it dies with us, and its switches
with it) and talks to it; `launch(switch_argv, log)` returns a `ForkedProcess`, which answers
`poll`, `wait`, `returncode`, `pid` and `send_signal` as the `subprocess.Popen` of an exec'd
switch does, so the switch node starts, probes and stops both alike. The server's replies and exit reports are read
by one thread; `close()` ends the server (it stops the switches still running).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from topos.errors import FabricLabError
from topos.mininet.procs import spawn


class ForkServerError(FabricLabError, RuntimeError):
    pass


class ForkedProcess:
    """A process the fork server made; its exit status comes from the server."""

    def __init__(self, server: ForkServerClient, pid: int, args: Sequence[str]):
        self._server = server
        self.pid = pid
        self.args = list(args)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            status = self._server.wait_status(self.pid, timeout)
            if status is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self.returncode = status
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServerClient:
    """This side of a running fork server: starts it, asks it for switches, reads their exits."""

    def __init__(self, argv: Sequence[str], stop_timeout: float = 10.0):
        self._stop_timeout = stop_timeout
        self._proc = spawn(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
        self._cond = threading.Condition()
        self._replies: list[dict] = []
        self._exited: dict[int, int] = {}
        self._gone = False  # the server's output ended
        self._reader = threading.Thread(target=self._read, name="forkserver-reader",
                                        daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                if "exited" in msg:
                    self._exited[msg["exited"]] = msg["status"]
                else:
                    self._replies.append(msg)
                self._cond.notify_all()
        with self._cond:
            self._gone = True
            self._cond.notify_all()

    def launch(self, argv: Sequence[str], log: Path, timeout: float = 10.0) -> ForkedProcess:
        """Fork a switch running `argv` (argv[0], the program, is the server's own); its
        stdout and stderr go to `log`."""
        request = json.dumps({"argv": list(argv[1:]), "log": str(log)}) + "\n"
        with self._cond:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(request.encode())
                self._proc.stdin.flush()
            except OSError as e:
                raise ForkServerError(f"the switch fork server is gone: {e}") from None
            if not self._cond.wait_for(lambda: self._replies or self._gone, timeout):
                raise ForkServerError(f"the switch fork server did not answer in {timeout:g} s")
            if not self._replies:
                raise ForkServerError(f"the switch fork server exited: {self._stderr()}")
            reply = self._replies.pop(0)
        if "pid" not in reply:
            raise ForkServerError(f"the switch fork server refused: {reply.get('error')}")
        return ForkedProcess(self, reply["pid"], argv)

    def status(self, pid: int) -> int | None:
        with self._cond:
            return self._status(pid)

    def _status(self, pid: int) -> int | None:
        if pid in self._exited:
            return self._exited[pid]
        return -signal.SIGKILL if self._gone else None  # the server's death signal took it

    def wait_status(self, pid: int, timeout: float | None) -> int | None:
        with self._cond:
            self._cond.wait_for(lambda: self._status(pid) is not None, timeout)
            return self._status(pid)

    def _stderr(self) -> str:
        self._proc.wait(self._stop_timeout)
        assert self._proc.stderr is not None
        return self._proc.stderr.read().decode(errors="replace").strip()[-2000:]

    def close(self) -> None:
        """End the server: it stops the switches still running, then exits."""
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(self._stop_timeout)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._reader.join(self._stop_timeout)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
