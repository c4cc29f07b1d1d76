"""`straggler`: one ToR port served at a tenth of its link rate; the quick run must name it (and
name nothing while the fabric is healthy), and every rank's iteration must slow."""

from __future__ import annotations

import json

import pytest

from experiments.framework import execute
from experiments.framework.registry import get
from tests.ports import EXPERIMENT_RUNS


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_straggler_names_the_degraded_link(tmp_path):
    result = execute(get("straggler"), quick=True, target="p4switch", out=tmp_path / "st",
                     overrides=EXPERIMENT_RUNS["straggler"].overrides,
                     progress=lambda _line: None)
    params = json.loads((result.path / "params.json").read_text())
    assert params["status"] == "complete"
    assert {"iterations.png", "ranks.png"} <= set(params["plots"])
    verdict = {r["phase"]: r for r in result.read_csv("verdict.csv")}
    degraded = verdict["degraded"]
    assert degraded["degraded_link"] == "gxta-s1r1->gxh3n1"  # the last server's last NIC
    assert degraded["named_link"] == degraded["degraded_link"], degraded["why"]
    assert int(degraded["named_packets"]) > 0
    assert verdict["healthy"]["named_link"] == "", verdict["healthy"]["why"]
    assert degraded["diagnosed_link"].startswith("gxta-s1r1:")  # the ToR's port to the NIC
    assert degraded["diagnosed_link"].endswith(" -> gxh3n1:0")
    assert degraded["diagnosed_symptom"] == "slow"
    assert degraded["diagnose_match"] == "1"  # fabric-lab diagnose names the same port
    its = {r["phase"]: float(r["iteration_s"]) for r in result.read_csv("iterations.csv")}
    assert its["degraded"] > its["healthy"]
    ranks = result.read_csv("ranks.csv")
    slow = max((r for r in ranks if r["phase"] == "degraded"),
               key=lambda r: float(r["own_iteration_s"]))
    assert slow["nic"] == "gxh3n1"
