"""`fabric-lab train --out`: each iteration's rows on disk as it is measured, the directory
claimed before anything starts, and a write that fails costing no measurement (no network: the
iterations are laid out from given collective times, as the accounting tests do)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.framework.results import ResultDirError, ResultDirInUse, claim
from jobs.gpus import Gpu
from jobs.scale import Scale
from jobs.train import CollectiveRun, JobScale, TrainResult, lay_out
from jobs.train_record import TrainRecord
from jobs.workload import validate
from tests.interrupt import interrupt_when
from tests.ports import FABRICS
from topos.builders import build_fabric

REPO = Path(__file__).resolve().parents[2]

JOB = validate({"name": "j", "servers": 4, "gpus_per_server": 2, "parallelism": {"data": 8},
                "compute_s": 1.0, "gradient_bytes": "64M", "buckets": 2}, "j")
GPUS = [Gpu(f"s{i // 2}", i % 2, f"n{i}", f"10.0.0.{i}", i % 2) for i in range(8)]


def measured(result: TrainResult, index: int) -> None:
    """Iteration `index` as `jobs.train.train` adds it to the result."""
    runs = [CollectiveRun(index, c.purpose, "all_reduce", "ring", 1, 8, c.bytes, 64, 0.1, 0.1,
                          1.0, 1.75, True, 0, 0, [0.1] * 8) for c in JOB.collectives()]
    result.iterations.append(lay_out(JOB, index, runs, 8))


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def new_result() -> TrainResult:
    return TrainResult(JOB, GPUS, JobScale(Scale(10e6, 400e9)))


def test_each_iteration_is_on_disk_as_it_ends_and_the_end_is_recorded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    record = TrainRecord(out, {"job": "j", "iterations": 3})
    params = json.loads((out / "params.json").read_text())
    assert params["experiment"] == "train" and params["status"] == "incomplete"
    assert rows(out / "iterations.csv") == []  # the headers, before the first iteration
    result = new_result()
    for i in range(2):
        measured(result, i)
        record.iteration(result, result.iterations[-1])
        assert [r["iteration"] for r in rows(out / "iterations.csv")] == [str(n) for n in
                                                                          range(i + 1)]
        assert len(rows(out / "collectives.csv")) == (i + 1) * len(JOB.collectives())
    summary = record.finish("interrupted")
    assert summary is not None and summary["status"] == "interrupted"
    assert len(summary["iterations"]) == 2
    assert json.loads((out / "summary.json").read_text()) == summary
    assert len(rows(out / "ranks.csv")) == 8
    params = json.loads((out / "params.json").read_text())
    assert (params["status"], params["iterations"]) == ("interrupted", 2)
    assert record.failure is None
    claim(tmp_path / "again").close()
    with pytest.raises(ResultDirError, match="not an empty directory"):
        TrainRecord(out)


def test_interrupted_before_an_iteration_ended_keeps_the_headers_and_says_none(
        tmp_path: Path) -> None:
    record = TrainRecord(tmp_path / "out")
    assert record.finish("interrupted") is None
    assert record.iterations == 0 and record.failure is None
    assert json.loads((tmp_path / "out" / "params.json").read_text())["status"] == "interrupted"
    assert not (tmp_path / "out" / "summary.json").exists()


def test_an_out_that_cannot_be_used_is_refused_before_anything_starts(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ResultDirError, match="a-file is a file, not a directory"):
        TrainRecord(tmp_path / "a-file")
    busy = claim(tmp_path / "busy")
    try:
        with pytest.raises(ResultDirInUse, match=f"busy: another run is writing to it "
                                                 f"\\(pid {os.getpid()}\\)"):
            TrainRecord(tmp_path / "busy")
    finally:
        busy.close()


def test_a_final_file_that_cannot_be_written_is_named_and_the_summary_still_returned(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    record = TrainRecord(out)
    result = new_result()
    measured(result, 0)
    record.iteration(result, result.iterations[0])
    (out / "summary.json").mkdir()  # in the way of the summary
    summary = record.finish("complete")
    assert summary is not None and summary["iterations"][0]["iteration"] == 0
    assert record.failure == f"{out / 'summary.json'}: Is a directory"
    assert len(rows(out / "iterations.csv")) == 1  # what was written before stays


@pytest.mark.root
def test_a_full_disk_mid_run_stops_the_writing_not_the_measuring(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "fabric-lab-test", str(disk)],
                   check=True)
    record = None
    try:
        record = TrainRecord(disk / "out")
        # the disk fills up
        with (disk / "filler").open("wb", buffering=0) as filler, pytest.raises(OSError):
            while True:
                filler.write(b"\0" * 4096)
        result = new_result()
        for i in range(40):  # enough rows to need a block the disk no longer has
            measured(result, i)
            record.iteration(result, result.iterations[-1])
        assert record.failure is not None and record.failure.endswith("No space left on device")
        assert record.failure.startswith(f"{disk / 'out'}/")  # the file it was writing
        summary = record.finish("complete")
        assert summary is not None and len(summary["iterations"]) == 40  # nothing lost
    finally:
        if record is not None:
            record.finish("failed")  # closes its files; after the first, writes nothing
        subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_ctrl_c_during_train_keeps_the_iterations_measured_and_prints_their_report(
        tmp_path: Path) -> None:
    fabric = tmp_path / "hpn7.json"
    fabric.write_text(json.dumps(FABRICS["jobs-train-interrupt"].apply(
        build_fabric("hpn7")).to_dict()))
    out = tmp_path / "out"
    status, stdout, stderr, on_disk = interrupt_when(
        [sys.executable, "-m", "fabric_lab.cli", "train", str(REPO / "jobs/examples/gpt-3d.yaml"),
         "--fabric", str(fabric), "--iterations", "20", "--time-scale", "0.25",
         "--out", str(out)],
        lambda line: line.startswith("iteration 0: ") and "compute" in line,  # its end
        cwd=REPO, timeout=300, before=lambda: len(rows(out / "iterations.csv")))
    assert on_disk >= 1  # on disk before the run ends
    assert status == 130, stderr
    kept = rows(out / "iterations.csv")
    assert 1 <= len(kept) < 20
    assert stderr.strip().splitlines()[-1] == (f"fabric-lab train: interrupted after {len(kept)} "
                                               f"iteration(s); kept in {out}")
    assert "mean iteration" in stdout and "Traceback" not in stderr  # the report of those
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and len(summary["iterations"]) == len(kept)
    assert json.loads((out / "params.json").read_text())["status"] == "interrupted"
