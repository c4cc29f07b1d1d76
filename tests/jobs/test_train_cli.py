"""`fabric-lab train`: bad input is reported before anything starts; one short run of a 3-D
parallel job on HPN 7.0 (Mininet) reports an iteration that adds up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lab.cli import main
from tests.ports import FABRICS
from topos.builders import build_fabric

REPO = Path(__file__).resolve().parents[2]


def test_a_bad_job_lists_every_error(tmp_path, capsys):
    job = tmp_path / "bad.yaml"
    job.write_text("name: bad\nservers: 5\ngpus_per_server: 4\ncolour: red\n"
                   "parallelism: {data: 4, tensor: 3}\ncompute_s: 1\ngradient_bytes: 1M\n")
    assert main(["train", str(job)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml: 4 problems:" in err
    for key in ("colour:", "parallelism:", "parallelism.tensor:", "tensor_bytes:"):
        assert f"  - {key}" in err


def test_a_job_that_does_not_fit_the_fabric(tmp_path, capsys):
    job = tmp_path / "big.json"
    job.write_text(json.dumps({"name": "big", "servers": 8, "gpus_per_server": 2,
                               "parallelism": {"data": 16}, "compute_s": 1,
                               "gradient_bytes": "1M"}))
    assert main(["train", str(job), "--fabric", "hpn7"]) == 2
    err = capsys.readouterr().err
    assert "needs 8 servers, the fabric has 4" in err and "--scale" in err


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_train_gpt_3d_on_hpn7(tmp_path):
    fabric = tmp_path / "hpn7.json"
    fabric.write_text(json.dumps(FABRICS["jobs-train-cli"].apply(build_fabric("hpn7")).to_dict()))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "train", str(REPO / "jobs/examples/gpt-3d.yaml"),
         "--fabric", str(fabric), "--iterations", "1", "--time-scale", "0.25", "-F", "json",
         "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    (it,) = record["iterations"]
    assert it["iteration_s"] == pytest.approx(it["compute_s"] + it["exposed_s"], abs=1e-5)
    kinds = {c["purpose"]: c for c in record["collectives"]}
    assert set(kinds) == {"tp", "pp", "dp-bucket-0", "dp-bucket-1"}
    assert kinds["tp"]["algorithm"] == "hierarchical"  # two GPUs of one server: NVLink only
    assert all(c["complete"] and c["wrong"] == 0 and c["busbw_gbs"] > 0
               for c in record["collectives"])
    assert len(record["ranks_detail"]) == 8
    assert {p.name for p in out.iterdir()} == {"iterations.csv", "collectives.csv", "ranks.csv",
                                              "summary.json", "params.json", ".lock"}
    assert json.loads((out / "params.json").read_text())["status"] == "complete"
