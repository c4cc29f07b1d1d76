"""`fabric-lab controller` against a running fabric: programs it, stays on, reroutes on link
events, re-runs write nothing, SIGTERM ends it cleanly."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from controller.checks import pingall
from tests.controller.fabrics import PROGRAM, ct_fabric, ecmp_pipeline

pytestmark = [pytest.mark.mininet, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


class Lines:
    """A process's output lines, waited for with a deadline."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.seen = proc, []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(f"no line with {text!r}; output so far:\n"
                                     + "".join(self.seen))
            self.seen.append(line)
            if text in line:
                return line


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    ecmp_pipeline()  # skips while p4switch cannot compile the program
    from targets import P4SWITCH
    from topos.mininet import FabricNetwork

    spec = ct_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2)
    path = tmp_path_factory.mktemp("ctl") / "ctleafspine.json"
    path.write_text(spec.to_json())
    net = FabricNetwork(spec, P4SWITCH, log_dir=path.parent)
    try:
        net.start()
        yield spec, path, net
    finally:
        net.stop()


def _controller(path: Path, *extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "fabric_lab.cli", "controller", "--fabric", str(path),
            "--target", "p4switch", "--program", str(PROGRAM), *extra]
    return subprocess.Popen(argv, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _ip_link(intf: str, state: str) -> None:
    subprocess.run(["ip", "link", "set", "dev", intf, state], check=True, capture_output=True)


def test_programs_stays_on_reroutes_and_stops_on_sigterm(fabric):
    spec, path, net = fabric

    def popen(nic: str, argv: list[str]) -> subprocess.Popen:
        return net.host(nic).popen(argv)

    proc = _controller(path)
    lines = Lines(proc)
    uplink = next(ln for ln in spec.links_of("ctleaf0") if ln.other("ctleaf0").node == "ctspine0")
    try:
        lines.wait_for("running until interrupted")
        assert sum("pipeline pushed" in line for line in lines.seen) == len(spec.switches)
        result = pingall(spec, popen)
        assert not result.lost, str(result)

        _ip_link(uplink.a.intf, "down")
        # both ends see the carrier go; leaf0 drops spine0, spine0 reaches leaf0 through leaf1
        assert "rerouted" in lines.wait_for("ctleaf0~ctspine0 down", timeout=30)
        result = pingall(spec, popen)
        assert not result.lost, str(result)
        _ip_link(uplink.a.intf, "up")
        assert "rerouted" in lines.wait_for("ctleaf0~ctspine0 up", timeout=30)
        result = pingall(spec, popen)
        assert not result.lost, str(result)

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, "".join(lines.seen)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _ip_link(uplink.a.intf, "up")


def test_once_twice_the_second_run_writes_nothing(fabric):
    """(The second run also sets the queues through every switch's runtime CLI.)"""
    spec, path, _net = fabric
    for queues in ([], ["--queue-depth", "32", "--queue-rate", "0"]):
        proc = _controller(path, "--once", *queues)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        reports = [line for line in out.splitlines() if line.startswith("ct")]
        assert len(reports) == len(spec.switches), out
    assert all(" 0 inserted, 0 modified, 0 deleted" in line and "pipeline" not in line
               for line in reports), out
