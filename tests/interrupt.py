"""Press Ctrl-C on a command once it has printed a given line, as a user at a terminal would."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest


def interrupt_when(argv: Sequence[str], ready: Callable[[str], bool], *, cwd: Path,
                   env: dict[str, str] | None = None, timeout: float = 60.0,
                   before: Callable[[], Any] = lambda: None) -> tuple[int, str, str, Any]:
    """Run `argv`; at the first stdout line `ready` accepts, call `before()` (what is on disk
    then) and send SIGINT. Returns the exit status, the rest of stdout, stderr and what
    `before` returned; fails the test if the command ends first."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if ready(line):
                break
        else:
            pytest.fail(f"{argv[2:4]} ended before the line to interrupt at: {proc.communicate()}")
        seen = before()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stdout, stderr, seen
