"""Ctrl-C during a job experiment keeps the rows it measured: `fabric-lab run rank-mapping
--quick` interrupted after its first collective keeps busbw.csv and summary.csv of what it
measured, says `interrupted`, leaves no interface behind, and `fabric-lab replot` draws it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import compare
from tests.interrupt import interrupt_when
from tests.ports import EXPERIMENT_RUNS

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
CLI = [sys.executable, "-m", "fabric_lab.cli"]
RUN = EXPERIMENT_RUNS["rank-mapping-interrupt"]
FIRST_ROWS = "rank-mapping: naive hd allreduce 65536 B: busbw "  # progress after they are written


def rows_on_disk(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def interfaces(prefix: str) -> list[str]:
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                           check=True).stdout
    names = [line.split(": ")[1].split("@")[0] for line in links.splitlines()]
    return [name for name in names if name.startswith(prefix)]


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_ctrl_c_during_rank_mapping_keeps_its_rows_and_replot_draws_them(tmp_path: Path) -> None:
    out = tmp_path / "rm"
    status, stdout, stderr, measured = interrupt_when(
        [*CLI, "run", "rank-mapping", "--quick", "--target", "p4switch", "--out", str(out),
         *RUN.argv], lambda line: line.startswith(FIRST_ROWS), cwd=ROOT, env=ENV, timeout=180,
        before=lambda: rows_on_disk(out / "busbw.csv"))  # on disk while the run goes
    assert status == 130, stderr
    assert stderr.splitlines()[-1] == "fabric-lab run: interrupted" and "Traceback" not in stderr
    assert f"rank-mapping: interrupted: what it measured so far is in {out}" in stdout
    assert interfaces(RUN.prefix) == []  # the fabric is down

    assert [(r["order"], r["size"], r["complete"]) for r in measured] == [("naive", "65536", "1")]
    busbw = rows_on_disk(out / "busbw.csv")
    assert busbw[:len(measured)] == measured
    assert list(busbw[0]) == compare.busbw_fields("order", ["max_link_flows"])
    iterations = rows_on_disk(out / "iterations.csv")
    assert {r["order"] for r in iterations} <= {"naive"}  # remap never trained
    summary = rows_on_disk(out / "summary.csv")
    assert [r["order"] for r in summary] == list(dict.fromkeys(r["order"] for r in busbw))
    assert summary[0]["max_link_flows"] == "2.0"
    assert (summary[0]["iteration_s"] != "") == bool(iterations)
    assert json.loads((out / "params.json").read_text())["status"] == "interrupted"

    replot = subprocess.run([*CLI, "replot", str(out)], cwd=ROOT, env=ENV, capture_output=True,
                            text=True, timeout=120)
    assert replot.returncode == 0, replot.stderr
    plots = ["busbw.png", "iteration.png"] if iterations else ["busbw.png"]
    assert replot.stdout == (f"{out}: {len(plots)} plot(s): {', '.join(plots)} (interrupted: "
                             "drawn from the rows measured before the run stopped)\n")
    assert all((out / name).stat().st_size > 10_000 for name in plots)
