"""The experiment framework: result directories, parameters, provenance, plots and the report."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.framework import (
    Experiment,
    ExperimentError,
    RunContext,
    execute,
    resolve_params,
    scaled_fabric,
)
from experiments.framework.report import build_report
from experiments.framework.results import ResultDirError, allocate


def test_allocate_never_reuses_a_directory(tmp_path: Path) -> None:
    first_run, second_run = allocate("exp", base=tmp_path), allocate("exp", base=tmp_path)
    first_run.close()
    second_run.close()
    first, second = first_run.path, second_run.path
    assert first != second and first.parent == second.parent == tmp_path / "exp"
    (first / "data.csv").write_text("x\n")
    with pytest.raises(ResultDirError, match="never overwritten"):
        allocate("exp", out=first)
    assert (first / "data.csv").read_text() == "x\n"


def test_resolve_params_quick_and_typed_overrides(squares: Experiment) -> None:
    params = resolve_params(squares, quick=True, overrides={"ratio": "0.25", "enabled": "yes",
                                                            "sizes": "4,8", "label": "y"})
    assert params == {"count": 3, "label": "y", "ratio": 0.25, "enabled": True, "sizes": [4, 8]}
    with pytest.raises(ExperimentError, match="unknown parameter"):
        resolve_params(squares, quick=False, overrides={"cuont": "3"})
    with pytest.raises(ExperimentError, match="not a valid int"):
        resolve_params(squares, quick=False, overrides={"count": "many"})


def test_a_targets_own_defaults_apply_after_quick_and_before_overrides(
        tmp_path: Path, squares: Experiment) -> None:
    slow = dataclasses.replace(squares, per_target={"bmv2": {"count": 2, "label": "slow"}})
    assert resolve_params(slow, quick=True, overrides={}, target="p4switch")["count"] == 3
    on_bmv2 = resolve_params(slow, quick=True, overrides={"label": "z"}, target="bmv2")
    assert (on_bmv2["count"], on_bmv2["label"]) == (2, "z")
    result = execute(slow, quick=True, target="bmv2", base=tmp_path, progress=lambda _: None)
    record = json.loads((result.path / "params.json").read_text())
    assert record["target"] == "bmv2" and record["params"]["count"] == 2
    assert [row["n"] for row in result.read_csv("squares.csv")] == ["0", "1"]


def test_execute_writes_csv_params_and_plot(tmp_path: Path, squares: Experiment) -> None:
    result = execute(squares, quick=True, base=tmp_path, progress=lambda _: None)
    record = json.loads((result.path / "params.json").read_text())
    assert record["status"] == "complete" and record["quick"] is True
    assert record["params"]["count"] == 3
    assert record["plots"] == ["squares.png"]
    assert record["versions"]["python"] and record["git_revision"]
    assert [row["square"] for row in result.read_csv("squares.csv")] == ["0", "1", "4"]
    assert (result.path / "squares.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_failed_run_is_recorded(tmp_path: Path, squares: Experiment) -> None:
    def explode(ctx: RunContext) -> None:
        raise RuntimeError("link down")

    broken = Experiment(name="broken", summary="", duration="", defaults={}, quick={},
                        run=explode, plot=squares.plot)
    with pytest.raises(RuntimeError):
        execute(broken, base=tmp_path, progress=lambda _: None)
    (run,) = (tmp_path / "broken").iterdir()
    record = json.loads((run / "params.json").read_text())
    assert record["status"] == "failed" and "link down" in record["error"]


def test_report_embeds_every_plot(tmp_path: Path, squares: Experiment) -> None:
    for _ in range(2):
        execute(squares, quick=True, base=tmp_path, progress=lambda _: None)
    page, plots = build_report(tmp_path, tmp_path / "report.html")
    text = page.read_text()
    assert plots == 2
    assert text.count("data:image/png;base64,") == 2
    assert "<h2>squares</h2>" in text and "count" in text


def test_cli_errors_exit_2(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "fabric_lab.cli"]
    unknown = subprocess.run([*cli, "run", "no-such-experiment"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown experiment" in unknown.stderr
    missing = subprocess.run([*cli, "report", "--results", str(tmp_path / "none")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    listing = subprocess.run([*cli, "run", "--list"], capture_output=True, text=True)
    assert listing.returncode == 0


def test_params_record_the_resolved_target(tmp_path: Path, squares: Experiment) -> None:
    seen = []
    recording = dataclasses.replace(squares, run=lambda ctx: _noting(ctx, seen))
    record = json.loads((execute(recording, quick=True, base=tmp_path, progress=lambda _: None)
                         .path / "params.json").read_text())
    assert seen == ["p4switch"]  # auto is p4switch, installed BMv2 or not
    assert record["target"] == "p4switch" and record["target_requested"] == "auto"
    assert record["target_versions"]["p4switch"]
    with pytest.raises(ExperimentError, match="unknown target 'tofino'"):
        execute(recording, target="tofino", base=tmp_path, progress=lambda _: None)


def test_engine_only_experiment_records_what_it_computed_on(tmp_path: Path,
                                                            squares: Experiment) -> None:
    seen, said = [], []
    engine = dataclasses.replace(squares, run=lambda ctx: _noting(ctx, seen),
                                 targets=("p4switch",))
    result = execute(engine, quick=True, target="bmv2", base=tmp_path, progress=said.append)
    record = json.loads((result.path / "params.json").read_text())
    assert seen == ["p4switch"]
    assert record["target"] == "p4switch" and record["target_requested"] == "bmv2"
    assert any("computes on p4switch (no bmv2 switches)" in line for line in said)


@pytest.mark.bmv2
def test_bmv2_runs_record_bmv2_and_its_versions(tmp_path: Path, squares: Experiment) -> None:
    seen = []
    recording = dataclasses.replace(squares, run=lambda ctx: _noting(ctx, seen))
    result = execute(recording, quick=True, target="bmv2", base=tmp_path, progress=lambda _: None)
    record = json.loads((result.path / "params.json").read_text())
    assert seen == ["bmv2"] and record["target"] == "bmv2"
    assert set(record["target_versions"]) == {"simple_switch_grpc", "p4c-bm2-ss"}
    assert "not installed" not in record["target_versions"].values()


def _noting(ctx: RunContext, seen: list[str]) -> None:
    """The squares run, noting the target it was given."""
    seen.append(ctx.target)
    rows = [{"n": n, "square": n * n} for n in range(ctx.params["count"])]
    ctx.out.write_csv("squares.csv", rows, ["n", "square"])


def test_scale_reaches_the_fabric_and_params_and_bad_scale_is_refused(tmp_path: Path) -> None:
    params = {"scale": {"spines": 3, "segments": 3}}
    spec = scaled_fabric("leafspine", params, {"leaves": 2}, rate_mbps=5.0)
    assert sum(sw.name.startswith("spine") for sw in spec.switches) == 3  # segments: not its
    with pytest.raises(ExperimentError, match="the experiment sets it"):
        scaled_fabric("leafspine", {"scale": {"rate_mbps": 1}}, rate_mbps=5.0)
    from experiments.failover.experiment import EXPERIMENT as failover
    from experiments.incast.experiment import EXPERIMENT as incast
    with pytest.raises(ExperimentError, match="not a parameter of leafspine"):
        execute(failover, fabric="leafspine", base=tmp_path, scale={"segments": 2},
                progress=lambda _: None)
    with pytest.raises(ExperimentError, match="takes no --scale"):
        execute(incast, base=tmp_path, scale={"leaves": 3}, progress=lambda _: None)
    assert not any(tmp_path.iterdir())  # refused before a result directory was made


@pytest.mark.mininet
@pytest.mark.slow
def test_a_scaled_run_runs_on_the_scaled_fabric(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "run", "failover", "--quick", "--fabric",
         "leafspine", "--scale", "spines=3", "-p", "kinds=uplink", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    params = json.loads((tmp_path / "r" / "params.json").read_text())
    assert params["params"]["scale"] == {"spines": 3}
    logs = {p.name for p in (tmp_path / "r" / "logs").iterdir()}
    assert any(name.startswith("spine2") for name in logs), logs  # a third spine ran
    assert not any(name.startswith("spine3") for name in logs), logs


def test_the_runs_cluster_options_reach_the_experiment(tmp_path: Path, squares: Experiment) -> None:
    from topos.mininet.cluster import ClusterOptions

    seen = []
    options = ClusterOptions("localhost,server2")
    spread = dataclasses.replace(squares, run=lambda ctx: (seen.append(ctx.cluster), squares.run(ctx)))
    execute(spread, quick=True, base=tmp_path, progress=lambda _: None, cluster=options)
    execute(spread, quick=True, base=tmp_path, progress=lambda _: None)
    assert seen == [options, None]
