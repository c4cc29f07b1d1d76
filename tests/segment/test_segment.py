"""`segment`: HPN 7.0's claims checked on the lab's own P4 and fabric. The polarisation part
runs on the P4 engine alone; the quick experiment (Mininet + p4switch) checks the traced paths
and the ToR failure from its CSV files."""

from __future__ import annotations

import json

import pytest

from experiments.framework import execute, resolve_params
from experiments.framework.registry import get
from experiments.hpn_segment.experiment import EXPERIMENT, class_pairs, hpn, run_polarisation
from tests.ports import EXPERIMENT_RUNS


def test_the_three_traffic_classes_are_what_hpn_says():
    spec = hpn(resolve_params(EXPERIMENT, True, {}), True)
    pairs = class_pairs(spec)
    from topos.analysis import shortest_paths

    for src, dst in pairs["same-rail"]:
        assert [len(p) for p in shortest_paths(spec, src, dst)] == [1, 1]  # one ToR per plane
    for src, dst in pairs["cross-segment"]:
        paths = shortest_paths(spec, src, dst)
        assert len(paths) == 4 and {len(p) for p in paths} == {3}  # 2 planes x 2 aggs


def test_one_hash_stage_cannot_polarise_two_same_seed_stages_do():
    params = resolve_params(EXPERIMENT, True, {"polar_trials": "6"})
    rows = run_polarisation(params)
    k = params["polar_links"]
    by = {}
    for r in rows:
        by.setdefault(r["design"], []).append(r["paths_used"])
    hpn_used = by["HPN dual-plane (1 hash stage)"]
    same = by["3-tier, same seed"]
    per_switch = by["3-tier, per-switch seeds"]
    assert hpn_used == [k] * len(hpn_used)  # every aggregation switch used
    assert same == [k] * len(same)  # k of k*k paths: the second stage repeats the first
    assert min(per_switch) > 2 * k  # independent stages spread over most of the k*k paths


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_segment_quick(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    result = execute(get("segment"), quick=True, target="p4switch", out=tmp_path / "seg",
                     overrides=EXPERIMENT_RUNS["hpn-segment"].overrides,
                     progress=lambda _line: None)
    params = json.loads((result.path / "params.json").read_text())
    assert params["status"] == "complete"
    paths = result.read_csv("paths.csv")
    for r in paths:
        hops = int(r["switch_hops"])
        if r["class"] == "same-rail":
            assert hops == 1 and not r["aggs"], r  # the rail ToR only: no hashing
        else:
            assert hops == 3 and len(r["aggs"].split()) == 1, r
    hashed = [r for r in paths if r["class"] != "same-rail"]
    assert len({r["aggs"] for r in hashed}) >= 2, "the ToR's one ECMP decision spreads flows"
    tor = result.read_csv("tor_failure.csv")
    dual = [r for r in tor if r["fabric"] == "dual-ToR" and r["crossed"] == "1"]
    single = [r for r in tor if r["fabric"] == "single-ToR" and r["crossed"] == "1"]
    assert dual and single
    assert all(float(r["during_share"]) > 0.5 for r in dual), dual  # moved to the other plane
    assert all(float(r["during_share"]) < 0.1 for r in single), single  # stalled
    assert all(float(r["after_bps"]) > 0.5 * float(r["before_bps"]) for r in single), single
    assert {"paths.png", "polarisation.png", "tor_failure.png"} <= set(params["plots"])
