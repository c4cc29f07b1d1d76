"""Starting and stopping the lab's processes.

- `spawn(argv, **popen_kwargs)`: `subprocess.Popen` for a process that must not outlive us
  (switch targets, traffic workers, anything in a host's namespace). The child asks the kernel
  for SIGKILL when its parent dies (`prctl(PR_SET_PDEATHSIG)`, set by `setpriv` before it
  execs the command), so a `kill -9` of the lab takes its processes along. The kernel counts
  the *thread* that forked as the parent: spawns from other threads than the main one are made
  by one long-lived spawner thread, so a worker thread that ends does not take its children
  with it. The setting survives `exec` (not of set-user-ID programs), so it reaches BMv2
  unchanged and what `ip netns exec`, `nsenter` and `mnexec` exec into, but not a process that
  forks and lets its parent exit (`mnexec -d` as a process group leader does; see
  `topos.mininet.nodes`).
- `stop_child` / `stop_pid`: SIGTERM, wait up to a timeout, then SIGKILL. Waits use pidfds.
- `LineChild`: a child driven by JSON lines (requests on its stdin, one event per line on its
  stdout): the traffic workers and the collective agents.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

SETPRIV = shutil.which("setpriv")  # util-linux, on every Debian/Ubuntu


def pdeathsig_argv(argv: Sequence[str], sig: int = signal.SIGKILL) -> list[str]:
    """`argv` run through `setpriv --pdeathsig`: the process asks for `sig` when its parent goes,
    then execs `argv`. Not a `preexec_fn`: that makes subprocess fork() instead of vfork(), and
    fork() runs grpc's at-fork handlers, which deadlock in a process with live grpc threads."""
    if SETPRIV is None:
        return list(argv)
    return [SETPRIV, f"--pdeathsig={signal.Signals(sig).name}", "--", *argv]


class _Spawner:
    """One daemon thread that lives as long as the process and makes every off-main-thread
    spawn, so the parent the kernel watches is never a short-lived thread."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="fabric-lab-spawner", daemon=True).start()

    def _loop(self) -> None:
        while True:
            job, done = self.jobs.get()
            try:
                done.set_result(job())
            except BaseException as err:  # handed to the caller
                done.set_exception(err)

    def call(self, job: Callable[[], Any]) -> Any:
        done: Future = Future()
        self.jobs.put((job, done))
        return done.result()


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def _reset_after_fork() -> None:
    global _spawner, _spawner_lock
    _spawner, _spawner_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_reset_after_fork)


def _spawner_thread() -> _Spawner:
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = _Spawner()
        return _spawner


def spawn(argv: Sequence[str], *, pdeathsig: int = signal.SIGKILL,
          **kwargs: Any) -> subprocess.Popen:
    """`subprocess.Popen(argv, **kwargs)` whose process gets `pdeathsig` when we exit, however
    we exit (also SIGKILL): the setting is in place when it returns."""
    full = pdeathsig_argv(argv, pdeathsig)
    if threading.current_thread() is threading.main_thread():
        proc = subprocess.Popen(full, **kwargs)
    else:
        proc = _spawner_thread().call(lambda: subprocess.Popen(full, **kwargs))
    _wait_armed(proc)
    return proc


def _wait_armed(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """Wait until `setpriv` has exec'd the command: it sets the death signal first, and a
    parent that died before that would go unnoticed."""
    if SETPRIV is None:
        return
    setpriv, exe = os.path.realpath(SETPRIV), f"/proc/{proc.pid}/exe"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if os.readlink(exe) != setpriv:
                return
        except OSError:  # exited meanwhile
            return
        time.sleep(0.0005)


def wait_readable(fd: int, timeout: float | None) -> bool:
    """Wait until `fd` is readable (or at its end); False after `timeout` seconds (None: no
    limit). poll(), not select(): a lab with many processes has descriptors above 1024."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else max(0, int(timeout * 1000 + 0.999))))


_LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets the connection


def accepts(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """Readiness probe: does a TCP connect to `port` succeed? The probe resets its connection
    when it closes, so its ephemeral port is not left in TIME_WAIT, where it would keep a
    switch that starts next from binding that port (when planned ports lie in the kernel's
    ephemeral range, 32768-60999)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            return True
    except OSError:
        return False


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait until `pid` exits (works for processes that are not our children)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return wait_readable(fd, timeout)
    finally:
        os.close(fd)


def signal_group(pid: int, sig: int, group: bool = True) -> None:
    """Send `sig` to process group `pid` (or the process alone); a vanished one is ignored."""
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


class Child(Protocol):
    """What `stop_child` needs of a process: a `subprocess.Popen` or a forked switch."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def stop_child(proc: Child, timeout: float, *, group: bool = True) -> int:
    """Stop a child we started (in its own session when `group`); returns its exit status."""
    status = proc.poll()
    if status is not None:
        return status
    signal_group(proc.pid, signal.SIGTERM, group)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        signal_group(proc.pid, signal.SIGKILL, group)
        return proc.wait()


def stop_pid(pid: int, timeout: float, *, group: bool = False,
             first: int = signal.SIGTERM) -> str:
    """Stop a process that is not our child with `first` (SIGHUP for an interactive shell),
    SIGKILL after `timeout`; returns "terminated" or "killed"."""
    signal_group(pid, first, group)
    if wait_gone(pid, timeout):
        return "terminated"
    signal_group(pid, signal.SIGKILL, group)
    wait_gone(pid, timeout)
    return "killed"


class LineChild:
    """A child speaking JSON lines: requests on its stdin, one event per line on its stdout
    ({"event": NAME, ...}; {"event": "error", "message": ...} for a failed request). Its
    stderr goes to a file (a full pipe would stall it); `error` is raised for its errors, a
    silence past a deadline and its exit, with what it wrote there."""

    def __init__(self, popen: Callable[..., subprocess.Popen], argv: list[str], name: str,
                 error: type[Exception] = RuntimeError) -> None:
        self.name = name
        self.error = error
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self.proc = popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=self._err, bufsize=0)
        except BaseException:
            self._err.close()
            raise
        self._buf = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
        except BrokenPipeError:
            self.proc.wait()
            raise self.error(f"{self.name} exited: {self.stderr().strip()[-2000:]}") from None

    def line(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self.error(f"{self.name} did not answer in time")
            if wait_readable(fd, left):
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self.proc.wait()
                    raise self.error(f"{self.name} exited: {self.stderr().strip()[-2000:]}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def expect_by(self, event: str, deadline: float) -> dict[str, Any]:
        msg = self.line(deadline)
        if msg.get("event") == "error":
            raise self.error(f"{self.name}: {msg.get('message')}")
        if msg.get("event") != event:
            raise self.error(f"{self.name}: expected {event}, got {msg}")
        return msg

    def expect(self, event: str, timeout: float) -> dict[str, Any]:
        return self.expect_by(event, time.monotonic() + timeout)

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read().decode(errors="replace")

    def close(self, timeout: float = 5.0) -> None:
        """Ask it to quit ({"op": "quit"}), then SIGTERM, then SIGKILL."""
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
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        self._err.close()
