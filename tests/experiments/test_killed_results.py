"""A run killed at any point leaves its directory marked incomplete in params.json and no table
written whole (`write_csv`) half there; `fabric-lab report` and `fabric-lab replot` say which runs
did not complete. (Rows appended as measured, `append_csv`: tests/experiments/test_run_keeps_rows.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.framework.results import ResultDir, run_state

ROOT = Path(__file__).resolve().parents[2]
KILLABLE = Path(__file__).resolve().parent / "killable_run.py"


def killed_at(stage: str, out: Path) -> None:
    """Run killable_run.py into `out` and SIGKILL it once it reaches `stage`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(KILLABLE), str(out), stage], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == stage:
                break
        else:
            pytest.fail(f"the run never reached {stage}")
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout:
            proc.stdout.close()


@pytest.mark.parametrize("stage, whole", [("started", []), ("midway", []),
                                          ("first-written", ["first.csv"])])
def test_a_killed_run_is_marked_incomplete_and_leaves_no_partial_csv(stage, whole, tmp_path):
    out = tmp_path / "run"
    killed_at(stage, out)
    record = json.loads((out / "params.json").read_text())
    assert record["status"] == "incomplete"
    assert run_state(record) == "incomplete"  # its process is gone
    assert sorted(p.name for p in out.glob("*.csv")) == whole
    for name in whole:  # the files that are there are whole
        assert ResultDir(out).read_csv(name) == [
            {"i": str(i), "square": str(i * i)} for i in range(4)]


def test_a_running_run_is_told_from_a_killed_one(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(KILLABLE), str(out), "midway"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        assert proc.stdout.readline().strip() == "midway"
        assert run_state(json.loads((out / "params.json").read_text())) == "running"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert run_state(json.loads((out / "params.json").read_text())) == "incomplete"


def test_report_and_replot_name_the_runs_that_did_not_complete(tmp_path):
    results = tmp_path / "results"
    killed_at("midway", results / "killable" / "killed")
    done = subprocess.run([sys.executable, str(KILLABLE), str(results / "killable" / "whole")],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    cli = [sys.executable, "-m", "fabric_lab.cli"]
    report = subprocess.run([*cli, "report", "--results", str(results)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    unfinished = [line for line in report.stdout.splitlines() if "did not complete" in line]
    assert unfinished == [f"  incomplete: {results / 'killable' / 'killed'} (did not complete: "
                          "its CSV files may be missing or partial)"]
    page = (results / "report.html").read_text()
    assert "1 did not complete" in page and page.count("status incomplete (did not") == 1
    killed = results / "killable" / "killed"
    replot = subprocess.run([*cli, "replot", str(killed)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert replot.returncode == 2  # killed before its first table was whole: nothing to draw
    assert replot.stderr == (f"fabric-lab replot: {killed}: no CSV files: nothing was measured "
                             "to draw from (the run is incomplete)\n")
