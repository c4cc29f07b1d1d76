"""bench/incast_stalls.py refuses bad arguments before it starts a fabric, naming every one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "incast_stalls.py"


def test_every_bad_argument_is_named_at_once():
    done = subprocess.run([sys.executable, str(BENCH), "--stops", "0,400,-5", "--period", "300",
                           "--runs", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "a stall of 400 ms must be 0 or more and shorter than --period (300 ms)" in done.stderr
    assert "a stall of -5 ms" in done.stderr
    assert "--runs must be at least 1" in done.stderr
    assert done.stdout == ""  # nothing ran


def test_stalls_that_are_not_numbers_are_refused():
    done = subprocess.run([sys.executable, str(BENCH), "--stops", "30,abc"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--stops: numbers of ms, comma-separated, not '30,abc'" in done.stderr
