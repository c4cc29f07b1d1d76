"""`fabric-lab replot DIR` redraws a real run's plots from its CSV files alone."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.ecmp_hashing.experiment import EXPERIMENT
from experiments.framework import execute

ROOT = Path(__file__).resolve().parents[2]


def _replot(*dirs: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fabric_lab.cli", "replot", *map(str, dirs)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_replot_redraws_deleted_plots_from_the_csv(tmp_path: Path) -> None:
    result = execute(EXPERIMENT, quick=True, base=tmp_path, progress=lambda _: None,
                     overrides={"trials": "3", "flows": "2,4", "links": "2"})
    drawn = {p.name: p.stat().st_size for p in result.plots()}
    assert sorted(drawn) == ["imbalance.png", "polarisation.png"]
    for plot in result.plots():
        plot.unlink()
    csv_before = (result.path / "imbalance.csv").read_bytes()
    done = _replot(result.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{result.path}: 2 plot(s): imbalance.png, polarisation.png"
    again = {p.name: p.stat().st_size for p in result.plots()}
    assert sorted(again) == sorted(drawn)
    assert all(size > 10_000 for size in again.values())
    assert (result.path / "imbalance.csv").read_bytes() == csv_before  # CSV left as it was


def test_replot_names_what_is_wrong(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _replot(empty)
    assert done.returncode == 2
    assert "no params.json: not an experiment's result directory" in done.stderr

    result = execute(EXPERIMENT, quick=True, base=tmp_path, progress=lambda _: None,
                     overrides={"trials": "2", "flows": "2", "links": "2"})
    (result.path / "imbalance.csv").unlink()
    done = _replot(result.path)
    assert done.returncode == 2
    assert "ecmp-hashing needs imbalance.csv, which is missing" in done.stderr

    failed = tmp_path / "failed"
    failed.mkdir()
    (failed / "params.json").write_text(json.dumps({"experiment": "ecmp-hashing",
                                                     "status": "failed", "error": "boom"}))
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    (unknown / "params.json").write_text(json.dumps({"experiment": "nope"}))
    (unknown / "rows.csv").write_text("a\n1\n")
    done = _replot(failed, unknown)
    assert done.returncode == 2
    assert f"{failed}: no CSV files: nothing was measured to draw from (the run is failed)" \
        in done.stderr
    assert "unknown experiment 'nope'" in done.stderr


@pytest.mark.mininet
@pytest.mark.root
@pytest.mark.slow
def test_replot_redraws_a_demo_run(tmp_path: Path) -> None:
    """`fabric-lab demo` writes results/demo/<ts> too (not a registered experiment): one short
    uplink stage on a small leaf-spine, its timeline deleted and drawn again."""
    from experiments.demo.run import run_demo
    from tests.ports import FABRICS
    from topos import build_fabric

    spec = FABRICS["labs-replot"].apply(
        build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1))
    timeline = run_demo(kinds=["uplink"], spec=spec, before_s=1.0, hold_s=1.0, after_s=1.0,
                        flows_per_pair=2, out=tmp_path / "demo", stream=io.StringIO())
    assert timeline.name == "timeline.png"
    timeline.unlink()
    done = _replot(timeline.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{timeline.parent}: 1 plot(s): timeline.png"
    assert timeline.stat().st_size > 10_000
