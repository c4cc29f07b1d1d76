"""`fabric-lab lb` finds the running controller to ask through the run directory; these are the
cases that need no fabric: no controller, several, and one that is gone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lb(run: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(run)}
    env.pop("FABRIC_LAB_FABRIC", None)
    return subprocess.run([sys.executable, "-m", "fabric_lab.cli", "lb", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)


def test_without_a_running_controller_or_a_fabric_it_says_what_to_give(tmp_path):
    done = _lb(tmp_path / "run", "--mode", "dlb")
    assert done.returncode == 1
    assert "no fabric: give --fabric" in done.stderr


def test_several_running_fabrics_must_be_told_apart(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    listeners = []
    for name in ("leafspine-100.lb.sock", "hpn7-200.lb.sock"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(run / name))
        sock.listen(1)
        listeners.append(sock)
    try:
        done = _lb(run, "--mode", "ecmp")
        assert done.returncode == 2
        assert "several running fabrics take requests (hpn7-200, leafspine-100)" in done.stderr
    finally:
        for sock in listeners:
            sock.close()


def test_a_controller_that_is_gone_is_not_asked(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(run / "leafspine-100.lb.sock"))
    sock.close()  # the file stays, nobody listens: a `fabric-lab up` killed hard
    done = _lb(run, "--mode", "flowlet")
    assert done.returncode == 1
    assert "no fabric: give --fabric" in done.stderr  # it would connect directly
