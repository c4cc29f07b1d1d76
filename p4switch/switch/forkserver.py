"""Start p4switch processes by forking one that has already loaded the switch (a zygote).

A fabric starts a dozen or more switches at once, and a fresh `p4switch` spends about 0.1 s of
CPU importing gRPC, the P4Runtime protobufs (pure Python here) and the runtime before it
listens. This server loads them once, then forks one switch per request; the child parses its
command line as `p4switch` does and runs in its own session, its output in a log file.

    python -m p4switch.switch.forkserver
stdin, one JSON line per switch: {"argv": [p4switch arguments, without the program],
    "log": "path"}
stdout, one JSON line per request, in order: {"pid": N} or {"error": "..."}; and
    {"exited": N, "status": S} when a switch ends (S as `Popen.returncode`: -signal if killed).
At the end of stdin, or on SIGTERM, the switches still running get SIGTERM, then SIGKILL after
`STOP_S`, and the server exits.

The server runs no thread and no gRPC object before it forks, so the children start clean (gRPC
initialises itself at the first server or channel). A child dies with the server
(PR_SET_PDEATHSIG), and the server with whoever started it (`setpriv --pdeathsig`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import time
import traceback

import p4switch.cdp.engine
import p4switch.cdp.switch
import p4switch.server
import p4switch.switch.process
from p4switch.cli.switch import main as switch_main
from p4switch.compile_cache import compiler_digest
from p4switch.native import NativeUnavailable

# imported once, for every child (the C data plane's generator and engine: 0.2 s each)
PRELOADED = (p4switch.server, p4switch.switch.process, p4switch.cdp.engine, p4switch.cdp.switch)
STOP_S = 5.0
_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def _child(argv: list[str], log: str, server: int, keep: tuple[int, ...]) -> int:
    """In the forked child: a session of its own, stdio to the log, then the switch."""
    os.setsid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    libc.prctl(_PR_SET_NAME, b"p4switch")  # as top and `ps -e` name it (the cmdline stays)
    if os.getppid() != server:  # the server died before the death signal was armed
        return 1
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for fd in keep:
        os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    sys.argv = ["p4switch", *argv]
    return switch_main(argv)  # exits the process itself


def _fork(argv: list[str], log: str, keep: tuple[int, ...]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    server = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        status = _child(argv, log, server, keep)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(status)


class ForkServer:
    def __init__(self) -> None:
        self.children: set[int] = set()
        self._terminated = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        signal.set_wakeup_fd(self._wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # handled in the loop, via the pipe
        signal.signal(signal.SIGTERM, self._on_sigterm)
        compiler_digest()  # the compile cache's key part, computed once for every child
        with contextlib.suppress(NativeUnavailable):  # no C compiler: the switches say so
            p4switch.cdp.switch.switch_library()  # the C loop, loaded (built once) for all

    def _on_sigterm(self, *_: object) -> None:
        self._terminated = True

    def _say(self, **msg: object) -> None:
        os.write(1, (json.dumps(msg) + "\n").encode())

    def _request(self, line: bytes) -> None:
        try:
            req = json.loads(line)
            argv, log = req["argv"], req["log"]
            if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)
                    and isinstance(log, str)):
                raise ValueError("argv must be a list of strings and log a string")
        except (ValueError, KeyError, TypeError) as e:
            self._say(error=f"bad request: {e}")
            return
        try:
            pid = _fork(argv, log, (self._wake_r, self._wake_w))
        except OSError as e:
            self._say(error=f"fork failed: {e}")
            return
        self.children.add(pid)
        self._say(pid=pid)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.children.discard(pid)
            self._say(exited=pid, status=os.waitstatus_to_exitcode(status))

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def serve(self) -> int:
        poller = select.poll()
        poller.register(0, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        buf = b""
        while not self._terminated:
            for fd, _ in poller.poll():
                if fd == self._wake_r:
                    self._drain_wakeups()
                    self._reap()
                    continue
                data = os.read(0, 65536)
                if not data:
                    self.stop()
                    return 0
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._request(line)
        self.stop()
        return 0

    def stop(self) -> None:
        """SIGTERM the switches still running, SIGKILL what is left after STOP_S."""
        for sig, wait in ((signal.SIGTERM, STOP_S), (signal.SIGKILL, 1.0)):
            for pid in self.children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + wait
            waker = select.poll()
            waker.register(self._wake_r, select.POLLIN)
            self._reap()
            while self.children and time.monotonic() < deadline:
                waker.poll(max(1, int((deadline - time.monotonic()) * 1000)))  # a SIGCHLD
                self._drain_wakeups()
                self._reap()


def main() -> int:
    return ForkServer().serve()


if __name__ == "__main__":
    sys.exit(main())
