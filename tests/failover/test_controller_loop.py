"""`fabric-lab controller` stays on and reroutes around a failed link, logging the event."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.failover.fabrics import fo_fabric
from topos.mininet import failures as links

pytestmark = [pytest.mark.mininet, pytest.mark.slow, pytest.mark.root]
ROOT = Path(__file__).resolve().parents[2]


def read_until(proc: subprocess.Popen, text: str, timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while text not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            raise AssertionError(f"no {text!r} from the controller; it said:\n{seen}")
        if select.select([proc.stdout], [], [], left)[0]:
            seen += proc.stdout.readline()
    return seen


def test_the_controller_reroutes_a_failed_link_and_logs_it(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    from targets import P4SWITCH
    from topos.mininet import FabricNetwork

    spec = fo_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1)
    model = tmp_path / "fabric.json"
    model.write_text(spec.to_json())
    with FabricNetwork(spec, P4SWITCH, log_dir=tmp_path / "logs",
                       run_dir=tmp_path / "run") as net:
        proc = subprocess.Popen([sys.executable, "-m", "fabric_lab.cli", "controller",
                                 "--fabric", str(model), "--target", "p4switch"], cwd=ROOT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            read_until(proc, "running until interrupted", 120)
            link = links.find_link(spec, "foleaf0", "fospine0")
            links.set_link(spec, link, False)
            read_until(proc, "foleaf0~fospine0 down (port): rerouted in", 10)
            ping = net.host("foh0n0").popen(["ping", "-c", "1", "-W", "2", spec.nic("foh1n0").ip])
            assert ping.wait(10) == 0, "no route over the other spine"
            links.set_link(spec, link, True)
            read_until(proc, "foleaf0~fospine0 up (port): rerouted in", 10)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
