"""`fabric-lab run loss-recovery --quick`: a lossy link with a fast fabric's bandwidth-delay
product, go-back-N against selective retransmission over five runs per loss rate (IRN's and
Ultra Ethernet's claim, as a direction: selective retransmission keeps goodput near the bound
where go-back-N resends whole windows)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]


def test_selective_retransmission_keeps_goodput_where_go_back_n_resends_windows(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "run", "loss-recovery", "--quick",
         "-p", "packets=600", "--out", str(out)],
        capture_output=True, text=True, cwd=REPO, timeout=500, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads((out / "params.json").read_text())["status"] == "complete"
    trials = list(csv.DictReader((out / "trials.csv").open()))
    assert len(trials) == 2 * 5 * 2 and all(t["complete"] == "1" for t in trials)
    summary = {(float(r["loss"]), r["transport"]): r
               for r in csv.DictReader((out / "summary.csv").open())}
    for loss in (0.001, 0.01):
        gbn, sr = summary[(loss, "go-back-n")], summary[(loss, "selective")]
        assert float(sr["of_bound"]) >= float(gbn["of_bound"]), (loss, gbn, sr)
        # selective resends about what the link lost; go-back-N a window per loss
        assert float(sr["retransmitted"]) <= 2 * max(1.0, float(sr["link_lost"]))
    assert float(summary[(0.01, "selective")]["of_bound"]) > 0.8 > \
        float(summary[(0.01, "go-back-n")]["of_bound"])
    assert float(summary[(0.01, "go-back-n")]["retransmitted"]) > \
        10 * float(summary[(0.01, "selective")]["retransmitted"])
    assert (out / "goodput.png").stat().st_size > 0
