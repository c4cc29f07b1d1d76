"""`fabric-lab run failover --quick` end to end on a leaf-spine: files, and what they must show."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.failover import EXPERIMENT
from experiments.framework import execute

pytestmark = [pytest.mark.mininet, pytest.mark.slow]


def test_quick_failover_run_measures_every_kind_it_fails(tmp_path: Path) -> None:
    result = execute(EXPERIMENT, quick=True, fabric="leafspine", target="p4switch",
                     base=tmp_path, progress=lambda _: None,
                     overrides={"kinds": "uplink,downlink", "fail_s": "2.5"})
    outcomes = result.read_csv("outcomes.csv")
    assert {row["kind"] for row in outcomes} == {"uplink", "downlink"}
    for kind in ("uplink", "downlink"):
        hit = [row for row in outcomes if row["kind"] == kind and row["affected"] == "1"]
        assert hit, f"no flow crossed the failed {kind}"
        for row in hit:
            window = float(row["loss_window_ms"])
            assert 0 < window < 2500, f"{kind}: loss window {window} ms outside the failure"
            assert int(row["lost"]) >= 0
    events = result.read_csv("events.csv")
    downlink = [e for e in events if e["kind"] == "downlink"]
    assert {"down", "up"} <= {e["state"] for e in downlink}, "controller missed the downlink events"
    assert all(not e["error"] for e in events)
    timeline = result.read_csv("timeline.csv")
    assert timeline and any(float(r["goodput_bps"]) > 0 for r in timeline)
    assert sorted(p.name for p in result.plots()) == ["loss_windows.png", "timeline.png"]
