"""`rail-vs-clos`: the Clos contrast fabric, and the quick run's files. The bytes that climb to
the aggregation layer are the design's difference: a rail ring inside an HPN 7.0 segment stays on
its ToR, on the Clos every hop between servers climbs."""

from __future__ import annotations

import json

import pytest

from experiments.framework import execute
from experiments.framework.registry import get
from experiments.rail_vs_clos.fabric import shared_tor_clos
from tests.ports import EXPERIMENT_RUNS
from topos.analysis import shortest_paths


def test_a_servers_nics_share_its_tor_and_same_rail_traffic_climbs():
    spec = shared_tor_clos(segments=2, servers_per_segment=2, nics_per_server=2)
    for host in spec.hosts:
        tors = {spec.attachments(nic.name)[0][0] for nic in host.nics}
        assert len(tors) == 1
    paths = shortest_paths(spec, "h0n0", "h1n0")  # rail 0 of two servers of one segment
    assert {len(p) for p in paths} == {3} and len(paths) == 2  # ToR, one of 2 aggs, ToR


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_rail_vs_clos_quick(tmp_path):
    result = execute(get("rail-vs-clos"), quick=True, target="p4switch", out=tmp_path / "rc",
                     overrides=EXPERIMENT_RUNS["rail-vs-clos"].overrides,
                     progress=lambda _line: None)
    params = json.loads((result.path / "params.json").read_text())
    assert params["status"] == "complete"
    assert {"busbw.png", "iteration.png"} <= set(params["plots"])
    rows = result.read_csv("busbw.csv")
    assert rows and all(r["complete"] == "1" and r["wrong"] == "0" for r in rows)
    assert all(float(r["busbw_gbs"]) > 0 for r in rows)
    climbed = {r["fabric"]: r["agg_bytes"] for r in result.read_csv("summary.csv")}
    # per rail, 2 of the ring's 4 hops leave a segment on HPN 7.0; all 4 leave a ToR on the Clos
    assert 0 < float(climbed["hpn7"]) < 0.6 * float(climbed["clos"])
    its = result.read_csv("iterations.csv")
    assert {r["fabric"] for r in its} == {"hpn7", "clos"}
    for r in its:
        assert float(r["iteration_s"]) == pytest.approx(float(r["compute_s"]) +
                                                        float(r["exposed_s"]), abs=1e-5)
