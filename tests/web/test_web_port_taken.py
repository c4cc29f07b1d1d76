"""A web port another process holds is found before any fabric comes up: status 3 (this machine
cannot run it), one line naming the port, and nothing built."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ports import loose_port

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "jobs/examples/gpt-3d.yaml"


@pytest.mark.parametrize("command", [["up", "leafspine"], ["train", str(JOB)]],
                         ids=["up", "train"])
def test_a_taken_web_port_stops_the_command_before_bring_up(command):
    port = loose_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "fabric_lab.cli", *command, "--web",
                               "--web-port", str(port)], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
        seconds = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert f"--web-port {port}" in lines[0] and "Address already in use" in lines[0]
    assert "switch" not in done.stdout and "bring-up" not in done.stdout  # no stage ran
    assert seconds < 30
