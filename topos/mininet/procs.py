"""Stopping processes: SIGTERM, wait up to a timeout, then SIGKILL. Waits use pidfds, not sleeps."""

from __future__ import annotations

import os
import select
import signal
import subprocess


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait until `pid` exits (works for processes that are not our children)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
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


def stop_child(proc: subprocess.Popen, timeout: float, *, group: bool = True) -> int:
    """Stop a child we started (in its own session when `group`); returns its exit status."""
    if proc.poll() is not None:
        return proc.returncode
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
    if _wait_gone(pid, timeout):
        return "terminated"
    signal_group(pid, signal.SIGKILL, group)
    _wait_gone(pid, timeout)
    return "killed"
