"""`fabric-lab report` names the fabric of every run in its header, also for a run over several
fabrics (lb-compare records them in its parameters, its `fabric` is null)."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.framework.report import build_report


def _run(results: Path, experiment: str, fabric: str | None, params: dict) -> None:
    run = results / experiment / "20260101-000000"
    run.mkdir(parents=True)
    (run / "params.json").write_text(json.dumps({
        "experiment": experiment, "status": "complete", "target": "p4switch",
        "fabric": fabric, "params": params}))


def test_the_header_names_the_fabrics_of_a_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _run(results, "lb-compare", None, {"fabrics": ["leafspine", "hpn7"]})
    _run(results, "failover", "hpn7", {"fabric": "hpn7"})
    _run(results, "ecmp-hashing", None, {"links": [2, 4]})
    page, _plots = build_report(results, tmp_path / "report.html")
    text = page.read_text()
    assert text.count("status complete") == 3
    assert "fabric None" not in text
    assert "fabric leafspine, hpn7" in text and "fabric hpn7" in text
