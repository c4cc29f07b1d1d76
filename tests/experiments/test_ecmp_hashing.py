"""`ecmp-hashing` end to end: real ecmp.p4 in the p4switch engine, CSV content and plots."""

from __future__ import annotations

from pathlib import Path

from experiments.ecmp_hashing.experiment import EXPERIMENT
from experiments.framework import execute


def test_quick_run_measures_imbalance_and_polarisation(tmp_path: Path) -> None:
    result = execute(EXPERIMENT, quick=True, base=tmp_path, progress=lambda _: None,
                     overrides={"trials": "6", "flows": "2,8"})
    rows = result.read_csv("imbalance.csv")
    assert len(rows) == 2 * 2 * 6  # links x flows x trials
    for row in rows:
        links, flows, max_load = int(row["links"]), int(row["flows"]), int(row["max_load"])
        assert flows / links <= max_load <= flows
        assert float(row["imbalance"]) == max_load / (flows / links)
        assert 1 <= int(row["links_used"]) <= min(links, flows)
    # 8 flows on 2 links always collide; some 2-flow trials spread.
    assert all(row["collided"] == "1" for row in rows if row["links"] == "2" and row["flows"] == "8")
    polar = result.read_csv("polarisation.csv")
    same = [int(r["tier2_links_used"]) for r in polar if r["seeds"] == "same" and int(r["flows"])]
    per_switch = [int(r["tier2_links_used"]) for r in polar if r["seeds"] == "per-switch"]
    # Same program, same seed, same group size: the second tier repeats the first tier's choice.
    assert same and set(same) == {1}
    assert max(per_switch) > 1
    assert sorted(p.name for p in result.plots()) == ["imbalance.png", "polarisation.png"]
    assert all(p.stat().st_size > 10_000 for p in result.plots())
