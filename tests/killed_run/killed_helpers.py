"""Helpers of the killed-run tests: `fabric-lab` as a real subprocess, read line by line with a
deadline, and waits for processes that are not our children (uniquely named module, so imports
never pick up another area's helpers)."""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from topos import build_fabric
from topos.mininet.patch import patch_names
from topos.mininet.runstate import ProcessRecord, netns_inode

ROOT = Path(__file__).resolve().parents[2]


class Lab:
    """`fabric-lab ARGS` running in the background, its output (stdout and stderr) collected."""

    def __init__(self, args: list[str], run_dir: Path) -> None:
        env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(run_dir)}
        # stdin stays open (a pipe), so the Mininet CLI waits for commands
        self.proc = subprocess.Popen([sys.executable, "-m", "fabric_lab.cli", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
        self.lines: list[str] = []
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        """Block until a line containing `text` is printed (readiness), fail on exit/timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line with {text!r} in {timeout} s:\n{self.output}")
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"exited ({self.proc.wait()}) before printing {text!r}:\n"
                                     f"{self.output}")
            self.lines.append(line)
            if text in line:
                return line

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for the exit (closing stdin first) and collect the rest of the output."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:  # where it hangs: fabric-lab dumps its threads on USR1
            self.proc.send_signal(signal.SIGUSR1)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2)
            self.kill()
            with contextlib.suppress(queue.Empty):  # a child of it may hold the pipe open
                while (line := self._queue.get(timeout=1)) is not None:
                    self.lines.append(line)
            raise AssertionError(f"still running {timeout} s later:\n{self.output}") from None
        while (line := self._queue.get(timeout=timeout)) is not None:
            self.lines.append(line)
        return rc

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def run_lab(args: list[str], run_dir: Path, timeout: float = 120.0) -> tuple[int, str]:
    lab = Lab(args, run_dir)
    try:
        return lab.finish(timeout), lab.output
    finally:
        lab.kill()


def wait_gone(rec: ProcessRecord, timeout: float) -> bool:
    """Wait (on a pidfd, no polling) until the recorded process is gone; True if it is."""
    if not rec.alive():
        return True
    try:
        fd = os.pidfd_open(rec.pid)
    except ProcessLookupError:
        return True
    try:
        select.select([fd], [], [], timeout)  # readable once it has exited (a zombie is gone)
        return not rec.alive()
    finally:
        os.close(fd)


def fabric_interfaces(fabric: str) -> list[str]:
    """Every root-namespace interface name a fabric's default plan creates (ports and patches)."""
    links = build_fabric(fabric).links
    return [n for ln in links for n in (ln.a.intf, ln.b.intf, *patch_names(ln.a.intf))]


def existing(names: list[str]) -> list[str]:
    return [n for n in names if Path("/sys/class/net", n).exists()]


def pids_in_netns(inodes: set[int]) -> list[int]:
    """Processes whose network namespace is one of `inodes`."""
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    return [pid for pid in pids if netns_inode(pid) in inodes]
