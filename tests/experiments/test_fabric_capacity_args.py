"""bench/fabric_capacity.py refuses bad arguments before it touches a network, naming every one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fabric_capacity.py"


def test_every_bad_argument_is_named_at_once():
    done = subprocess.run([sys.executable, str(BENCH), "--fabric", "leafspine,nosuch",
                           "--factor", "1", "--tolerance", "2"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "unknown fabric 'nosuch'" in done.stderr
    assert "--factor must be above 1" in done.stderr
    assert "--tolerance must be between 0 and 1" in done.stderr
    assert done.stdout == ""  # nothing ran
