"""Runs never lose what they measured: rows appended and flushed as they are measured, the run
marked incomplete until it ends and `interrupted` after Ctrl-C, a failing plot step leaving a
complete run that `fabric-lab replot` draws, and one run at a time in a result directory."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.ecmp_hashing.experiment import EXPERIMENT as ECMP
from experiments.ecmp_hashing.experiment import FIELDS as ECMP_FIELDS
from experiments.framework import execute
from experiments.framework.experiment import PlotError
from experiments.framework.results import (
    LOCK_FILE,
    ResultDir,
    ResultDirError,
    ResultDirInUse,
    allocate,
    claim,
    run_state,
)
from tests.interrupt import interrupt_when

ROOT = Path(__file__).resolve().parents[2]
MEASURING = Path(__file__).resolve().parent / "measuring_run.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
CLI = [sys.executable, "-m", "fabric_lab.cli"]


def rows_on_disk(path: Path) -> list[dict[str, str]]:
    """The CSV file as another process reads it now."""
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def record(out: Path) -> dict:
    return json.loads((out / "params.json").read_text())


class Measuring:
    """measuring_run.py on `out`: `measure(n)` lets it append n more rows and waits for them."""

    def __init__(self, out: Path, rows: int) -> None:
        self.proc = subprocess.Popen([sys.executable, str(MEASURING), str(out), str(rows)],
                                     cwd=ROOT, env=ENV, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.next_line() == "started"

    def next_line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def measure(self, count: int) -> None:
        assert self.proc.stdin is not None
        for _ in range(count):
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            assert self.next_line().startswith("row ")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=30)


def test_each_row_is_on_disk_as_soon_as_it_is_appended(tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    with result.append_csv("rows.csv", ["n", "note"]) as rows:
        assert rows_on_disk(tmp_path / "rows.csv") == []  # the header is there at once
        for n in range(3):
            rows.append({"n": n, "note": "a, \"quoted\" one"})
            assert [r["n"] for r in rows_on_disk(tmp_path / "rows.csv")] == [
                str(i) for i in range(n + 1)]
    assert rows_on_disk(tmp_path / "rows.csv")[2] == {"n": "2", "note": "a, \"quoted\" one"}
    with pytest.raises(FileExistsError):  # appending never starts over a table
        result.append_csv("rows.csv", ["n"])


def test_a_trial_of_rows_is_on_disk_when_extend_returns(tmp_path: Path) -> None:
    with ResultDir(tmp_path).append_csv("trials.csv", ["trial", "flow"]) as trials:
        trials.extend({"trial": 0, "flow": f"f{i}"} for i in range(3))
        assert rows_on_disk(tmp_path / "trials.csv") == [{"trial": "0", "flow": f"f{i}"}
                                                          for i in range(3)]
        assert trials.rows == 3


def test_ctrl_c_keeps_every_row_measured_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = Measuring(out, rows=10)
    try:
        run.measure(3)
        assert record(out)["status"] == "incomplete" and run_state(record(out)) == "running"
        assert len(rows_on_disk(out / "squares.csv")) == 3  # on disk while the run goes
        run.proc.send_signal(signal.SIGINT)
        assert run.proc.wait(timeout=30) == 130
    finally:
        run.stop()
    assert rows_on_disk(out / "squares.csv") == [{"i": str(i), "square": str(i * i)}
                                                  for i in range(3)]
    params = record(out)
    assert params["status"] == "interrupted" and run_state(params) == "interrupted"
    assert params["duration_s"] >= 0


def test_a_killed_run_keeps_its_rows_and_stays_incomplete(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = Measuring(out, rows=10)
    try:
        run.measure(2)
        run.proc.send_signal(signal.SIGKILL)
        run.proc.wait(timeout=30)
    finally:
        run.stop()
    assert [r["i"] for r in rows_on_disk(out / "squares.csv")] == ["0", "1"]
    assert record(out)["status"] == "incomplete" and run_state(record(out)) == "incomplete"


def test_ctrl_c_during_ecmp_hashing_keeps_its_rows_and_replot_draws_them(tmp_path: Path) -> None:
    out = tmp_path / "ecmp"
    status, stdout, stderr, measured = interrupt_when(
        [*CLI, "run", "ecmp-hashing", "--out", str(out), "-p", "trials=12"],
        lambda line: line.strip() == "ecmp-hashing: 2 links done", cwd=ROOT, env=ENV,
        before=lambda: len(rows_on_disk(out / "imbalance.csv")))
    assert status == 130
    assert stderr == "fabric-lab run: interrupted\n"
    assert f"ecmp-hashing: interrupted: what it measured so far is in {out}" in stdout
    rows = rows_on_disk(out / "imbalance.csv")
    assert len(rows) >= measured >= 6 * 12  # every trial on 2 links: 6 flow counts x 12 trials
    assert all(list(row) == ECMP_FIELDS and "" not in row.values() for row in rows)  # whole rows
    on_two = {(row["flows"], row["trial"]) for row in rows if row["links"] == "2"}
    assert len(on_two) == 6 * 12
    assert record(out)["status"] == "interrupted"
    assert not (out / "polarisation.csv").exists()  # the part it never reached

    replot = subprocess.run([*CLI, "replot", str(out)], cwd=ROOT, env=ENV, capture_output=True,
                            text=True, timeout=120)
    assert replot.returncode == 0, replot.stderr
    assert replot.stdout == (f"{out}: 1 plot(s): imbalance.png (interrupted: drawn from the rows "
                             "measured before the run stopped)\n")
    assert (out / "imbalance.png").stat().st_size > 10_000


def test_a_plot_step_on_a_full_disk_leaves_a_complete_run_that_replot_draws(
        tmp_path: Path) -> None:
    def plot_onto_a_full_disk(result: ResultDir) -> list[Path]:
        (result.path / "imbalance.png").symlink_to("/dev/full")  # every write: ENOSPC
        return ECMP.plot(result)

    full = dataclasses.replace(ECMP, plot=plot_onto_a_full_disk)
    overrides = {"trials": "2", "flows": "2,4", "links": "2"}
    with pytest.raises(PlotError, match="measured completely into .*No space left on device.*"
                                        "fabric-lab replot"):
        execute(full, quick=True, base=tmp_path, overrides=overrides, progress=lambda _: None)
    (out,) = (tmp_path / "ecmp-hashing").iterdir()
    params = record(out)
    assert params["status"] == "complete" and run_state(params) == "complete"
    assert "No space left on device" in params["plot_error"] and params["plots"] == []
    assert len(rows_on_disk(out / "imbalance.csv")) == 1 * 2 * 2  # links x flows x trials
    assert len(rows_on_disk(out / "polarisation.csv")) == 2 * 2  # seeds x trials

    (out / "imbalance.png").unlink()  # space again
    replot = subprocess.run([*CLI, "replot", str(out)], cwd=ROOT, env=ENV, capture_output=True,
                            text=True, timeout=120)
    assert replot.returncode == 0, replot.stderr
    assert replot.stdout == f"{out}: 2 plot(s): imbalance.png, polarisation.png\n"
    params = record(out)
    assert "plot_error" not in params and params["plots"] == ["imbalance.png", "polarisation.png"]


def test_a_plot_that_raises_is_a_plot_failure_and_replot_says_what_it_raised(
        tmp_path: Path) -> None:
    def broken_plot(result: ResultDir) -> list[Path]:
        raise ZeroDivisionError("division by zero")

    broken = dataclasses.replace(ECMP, plot=broken_plot)
    with pytest.raises(PlotError, match="ZeroDivisionError: division by zero"):
        execute(broken, quick=True, base=tmp_path, progress=lambda _: None,
                overrides={"trials": "1", "flows": "2", "links": "2"})
    (out,) = (tmp_path / "ecmp-hashing").iterdir()
    assert record(out)["status"] == "complete"
    (out / "imbalance.csv").write_text((out / "imbalance.csv").read_text() + "2,2,1,2,1.0,x,1,1\n")
    replot = subprocess.run([*CLI, "replot", str(out)], cwd=ROOT, env=ENV, capture_output=True,
                            text=True, timeout=120)
    assert replot.returncode == 1
    assert replot.stderr.startswith(f"fabric-lab replot: {out}: plotting ecmp-hashing failed: "
                                    "ValueError: ")
    assert len(replot.stderr.splitlines()) == 1


def test_a_second_run_on_the_same_out_fails_at_once_and_the_first_keeps_its_files(
        tmp_path: Path) -> None:
    out = tmp_path / "shared"
    first = Measuring(out, rows=2)
    try:
        first.measure(1)
        before = (out / "params.json").read_bytes()
        second = subprocess.run([*CLI, "run", "ecmp-hashing", "--quick", "--out", str(out)],
                                cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
        assert second.returncode == 3
        assert second.stderr == (f"fabric-lab run: {out}: another run is writing to it (pid "
                                 f"{first.proc.pid}); results are never overwritten\n")
        assert (out / "params.json").read_bytes() == before
        with pytest.raises(ResultDirInUse):  # the lock is the directory's, in this process too
            claim(out)
        first.measure(1)
        assert first.next_line() == "end"
        assert first.proc.wait(timeout=30) == 0
    finally:
        first.stop()
    assert record(out)["experiment"] == "measuring" and record(out)["status"] == "complete"
    assert [r["i"] for r in rows_on_disk(out / "squares.csv")] == ["0", "1"]
    with pytest.raises(ResultDirError, match="not an empty directory"):  # ended: now it is used
        claim(out)


def test_the_lock_is_held_until_the_run_ends_and_a_refused_directory_is_left_as_it_was(
        tmp_path: Path) -> None:
    run = allocate("exp", out=tmp_path / "run")
    with pytest.raises(ResultDirInUse):
        allocate("exp", out=tmp_path / "run")
    run.close()
    again = claim(tmp_path / "run")  # empty but for the lock file: usable
    again.close()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine\n")
    with pytest.raises(ResultDirError, match="not an empty directory"):
        claim(theirs)
    assert sorted(p.name for p in theirs.iterdir()) == ["notes.txt"]  # no lock file left
    assert LOCK_FILE == ".lock"
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(ResultDirError, match=f"{a_file} is a file, not a directory"):
        claim(a_file / "run")
    with pytest.raises(ResultDirError, match=f"{a_file} is a file, not a directory"):
        allocate("exp", base=a_file)
