"""`rank-mapping`: EFLOPS' remapping puts one flow on a BiGraph link per step where host order
puts two; the quick run measures both orders and writes its files."""

from __future__ import annotations

import json

import pytest

from experiments.framework import execute, resolve_params
from experiments.framework.registry import get
from experiments.rank_mapping.experiment import EXPERIMENT, ORDERS, fabric, max_link_flows
from jobs.gpus import cluster_from_fabric
from jobs.placement import rank_order
from tests.ports import EXPERIMENT_RUNS


@pytest.mark.parametrize("quick", [True, False])
def test_remapping_removes_link_sharing(quick):
    spec = fabric(resolve_params(EXPERIMENT, quick, {}))
    cluster = cluster_from_fabric(spec)
    flows = {o: max_link_flows(spec, rank_order(cluster, o, spec), 65536) for o in ORDERS}
    assert flows == {"naive": 2, "remap": 1}


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_rank_mapping_quick(tmp_path):
    result = execute(get("rank-mapping"), quick=True, target="p4switch", out=tmp_path / "rm",
                     overrides=EXPERIMENT_RUNS["rank-mapping"].overrides,
                     progress=lambda _line: None)
    params = json.loads((result.path / "params.json").read_text())
    assert params["status"] == "complete"
    assert {"busbw.png", "iteration.png"} <= set(params["plots"])
    rows = result.read_csv("busbw.csv")
    assert {r["order"] for r in rows} == set(ORDERS)
    assert all(r["complete"] == "1" and r["wrong"] == "0" and float(r["busbw_gbs"]) > 0
               for r in rows)
    summary = {r["order"]: r for r in result.read_csv("summary.csv")}
    assert float(summary["remap"]["max_link_flows"]) == 1
    assert float(summary["naive"]["max_link_flows"]) == 2
    for r in result.read_csv("iterations.csv"):
        assert float(r["iteration_s"]) == pytest.approx(float(r["compute_s"]) +
                                                        float(r["exposed_s"]), abs=1e-5)
