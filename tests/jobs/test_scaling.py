"""`scaling`: the quick run trains at two link rates and writes one point per rate."""

from __future__ import annotations

import json

import pytest

from experiments.framework import execute
from experiments.framework.registry import get
from tests.ports import EXPERIMENT_RUNS


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_scaling_quick(tmp_path):
    result = execute(get("scaling"), quick=True, target="p4switch", out=tmp_path / "sc",
                     overrides=EXPERIMENT_RUNS["scaling"].overrides,
                     progress=lambda _line: None)
    params = json.loads((result.path / "params.json").read_text())
    assert params["status"] == "complete" and params["plots"] == ["scaling.png"]
    points = result.read_csv("points.csv")
    assert [float(p["link_mbps"]) for p in points] == params["params"]["link_mbps"]
    for p in points:
        assert float(p["model_gbps"]) == 40 * float(p["link_mbps"])
        assert float(p["busbw_gbs"]) > 0
        assert float(p["efficiency"]) == pytest.approx(
            float(p["compute_s"]) / float(p["iteration_s"]), rel=1e-3)
        assert 0 < float(p["efficiency"]) <= 1
