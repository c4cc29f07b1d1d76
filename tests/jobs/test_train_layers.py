"""`fabric-lab train WORKLOAD.txt`: a SimAI workload layer by layer on a Mininet fabric, every
group's traffic at once; its files; and a slow GPU told apart from a slow link."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.megatron import Gpt, workload
from tests.ports import FABRICS
from topos.builders import build_fabric

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.mininet, pytest.mark.slow, pytest.mark.root]

def test_a_megatron_workload_on_hpn7_writes_its_timeline(tmp_path):
    """TP 2 inside each server (NVLink), DP 4 across them, two microbatches: the report, the
    tables, a trace with a track per rank and the lanes plot."""
    spec = FABRICS["jobs-layers-cli"].apply(build_fabric("hpn7"))
    fabric = tmp_path / "hpn7.json"
    fabric.write_text(json.dumps(spec.to_dict()))
    job = tmp_path / "gpt.txt"
    job.write_text(workload(Gpt(layers=2, hidden=1024, seq=512, tp=2, dp=4, ga=2)))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "train", str(job), "--fabric", str(fabric),
         "--iterations", "2", "--time-scale", "0.5", "--out", str(out)],
        capture_output=True, text=True, cwd=REPO, timeout=400, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "TP 2 x DP 4 x PP 1" in done.stdout
    files = {p.name for p in out.iterdir()}
    assert {"spans.csv", "iterations.csv", "groups.csv", "trace.json", "timeline.png",
            "params.json"} <= files
    assert json.loads((out / "params.json").read_text())["status"] == "complete"
    trace = json.loads((out / "trace.json").read_text())
    tracks = {e["tid"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert tracks == set(range(8))
    groups = {row.split(",")[0] for row in (out / "groups.csv").read_text().splitlines()[1:]}
    assert groups == {"tp", "dp"}
    spans = (out / "spans.csv").read_text().splitlines()
    # every rank computed every layer's three phases in both microbatches, both iterations
    computes = [s for s in spans[1:] if ",compute," in s and "optimizer" not in s]
    assert len(computes) == 8 * 2 * 2 * (4 * 2) * 3
