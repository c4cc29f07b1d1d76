"""`fabric-lab up`'s CLI fails links by name and the controller reroutes around them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.failover.fabrics import fo_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.slow, pytest.mark.root]
ROOT = Path(__file__).resolve().parents[2]


def test_link_fail_in_the_up_cli_is_rerouted_and_logged(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = fo_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1)
    path = tmp_path / "foleafspine.json"
    path.write_text(spec.to_json())
    commands = ["link_fail foleaf0 fospine1",
                "py __import__('time').sleep(1.5)",  # the watcher's poll and the reroute
                "events", "foh0n0 ping -c 1 -W 2 10.0.1.1", "link_restore foleaf0 fospine1",
                "py __import__('time').sleep(1.5)", "events", "links", "exit"]
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(tmp_path / "run"), "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([sys.executable, "-m", "fabric_lab.cli", "up", str(path),
                           "--target", "p4switch"], cwd=ROOT, env=env, text=True,
                          input="\n".join(commands) + "\n", capture_output=True, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "foleaf0~fospine1 down" in out
    assert "foleaf0~fospine1 down (port): rerouted in" in out
    assert "1 received" in out  # the pair still connects over the other spine
    assert "foleaf0~fospine1 up (port): rerouted in" in out
