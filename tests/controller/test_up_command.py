"""`fabric-lab up` as a user runs it: --pingall, --run, and interruption at any stage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.controller.fabrics import PROGRAM, ct_fabric, ecmp_pipeline
from tests.controller.switchproc import listening

pytestmark = [pytest.mark.mininet, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fabric_file(tmp_path):
    ecmp_pipeline()  # skips while p4switch cannot compile the program
    spec = ct_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2)
    path = tmp_path / "ctleafspine.json"
    path.write_text(spec.to_json())
    return spec, path


def _up(args: list[str], run_dir: Path, **popen) -> subprocess.Popen:
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(run_dir), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "fabric_lab.cli", "up", "--program", str(PROGRAM), *args]
    return subprocess.Popen(argv, cwd=ROOT,
                            env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, **popen)


def _interfaces_left(spec, timeout: float = 5.0) -> list[str]:
    """Interfaces of the plan still present; waits for the kernel's deferred namespace teardown
    (the root-namespace end of a host link goes when its namespace is finally destroyed)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [f"interface {end.intf}" for ln in spec.links for end in (ln.a, ln.b)
                if Path("/sys/class/net", end.intf).exists()]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)  # probe interval


def _left_behind(spec, run_dir: Path) -> list[str]:
    left = _interfaces_left(spec)
    left += [f"listener on gRPC port {sw.grpc_port}" for sw in spec.switches
             if listening(sw.grpc_port)]
    left += [f"run-state file {p.name}" for p in run_dir.glob("*")]
    return left


def test_pingall_reports_no_loss_and_exits_zero(fabric_file, tmp_path):
    spec, path = fabric_file
    proc = _up([str(path), "--target", "p4switch", "--pingall"], tmp_path / "run")
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, out
    pairs = len(spec.host_nics()) * (len(spec.host_nics()) - 1)
    assert f"pingall: {pairs}/{pairs} received, 0.0% lost" in out
    for stage in ("mininet + switches ready", "controller connected", "pipeline + routes",
                  "total"):
        assert stage in out
    assert _left_behind(spec, tmp_path / "run") == []


def test_run_gets_the_fabric_and_its_exit_status(fabric_file, tmp_path):
    spec, path = fabric_file
    check = (f"import json, os, sys; spec = json.load(open(os.environ['FABRIC_LAB_FABRIC'])); "
             f"sys.exit(7 if spec['switches'][0]['name'] == {spec.switches[0].name!r} else 1)")
    proc = _up([str(path), "--target", "p4switch", "--run",
                f"{sys.executable} -c \"{check}\""], tmp_path / "run")
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 7, out
    assert _left_behind(spec, tmp_path / "run") == []


@pytest.mark.parametrize("when", ["fabric model", "mininet + switches ready", "total"])
def test_interrupting_at_any_stage_leaves_nothing_behind(fabric_file, tmp_path, when):
    """SIGTERM once the output shows the stage `when` ended: fabric model = while Mininet and
    the switches start, mininet + switches ready = while connecting and programming, total =
    the fabric is routed and the command runs."""
    spec, path = fabric_file
    run_dir = tmp_path / "run"
    proc = _up([str(path), "--target", "p4switch", "--run", "sleep 120"], run_dir)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if when in line:
                proc.send_signal(signal.SIGTERM)
                break
        else:
            pytest.fail("fabric-lab up ended before the stage:\n" + "".join(seen))
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, "".join(seen) + rest
    assert _left_behind(spec, run_dir) == [], "".join(seen) + rest


def test_bad_input_is_reported_clearly(tmp_path):
    proc = _up(["nosuchfabric"], tmp_path / "run")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "'nosuchfabric' is neither a fabric JSON file nor one of:" in out
