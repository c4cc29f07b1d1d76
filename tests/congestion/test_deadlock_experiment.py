"""`fabric-lab run pfc-deadlock`, end to end on Mininet + p4switch, in one bring-up: the
deadlock forms and persists with the watchdog off, the watchdog breaks it within detection +
restoration time, the controller's check prevents it, and a healthy incast gets no false
detection at the default setting."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ports import EXPERIMENT_RUNS

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.1  # the watchdog polls every quarter of its 400 ms detection time
SLACK_S = 0.15  # the runtime-CLI round trips and a busy machine


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.mininet
@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_deadlock_forms_persists_is_broken_and_is_prevented(tmp_path: Path) -> None:
    out = tmp_path / "deadlock"
    done = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "run", "pfc-deadlock", "--quick",
         "--out", str(out), "-p", "settings=off,prevent", "-p", "sweep_ms=400",
         *EXPERIMENT_RUNS["pfc-deadlock"].argv],
        cwd=ROOT, capture_output=True, text=True, timeout=360, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    params = json.loads((out / "params.json").read_text())
    assert params["status"] == "complete" and params["target"] == "p4switch"
    det, rest = params["params"]["detection_ms"] / 1000, params["params"]["restoration_ms"] / 1000

    summary = {r["setting"]: r for r in _rows(out / "summary.csv")}
    off, prevent = summary["off"], summary["prevent"]
    # formed and persisting: every ring queue paused and non-empty, nothing sent after the
    # senders stopped
    assert off["deadlocked"] == "True" and off["all_paused"] == "True"
    assert int(off["ring_sent_after_stop"]) == 0
    assert all(int(d) > 0 for d in off["ring_depths"].split())
    # broken: declared stuck after the detection time, lossless again after restoration
    late_detect = float(off["late_detect_s"])
    assert det <= late_detect <= det + POLL_S + SLACK_S
    assert float(off["late_drained_s"]) <= det + POLL_S + SLACK_S
    assert late_detect + rest <= float(off["late_lossless_s"]) <= det + rest + POLL_S + SLACK_S
    assert int(off["late_dropped"]) > 0
    # prevented: the cyclic routes were refused, the same traffic left nothing stuck
    assert prevent["routes"].startswith("acyclic") and prevent["deadlocked"] == "False"
    assert all(int(d) == 0 for d in prevent["ring_depths"].split())

    (healthy,) = _rows(out / "sweep.csv")
    assert int(healthy["detection_ms"]) == params["params"]["detection_ms"]
    assert int(healthy["false_stuck"]) == 0 and int(healthy["watchdog_dropped"]) == 0
