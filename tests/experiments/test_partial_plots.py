"""The experiments that write their rows as they measure them draw the part a run measured
before it stopped: each plot on the tables of an interrupted run (a header only, a part
missing, a variant or a size not reached), no network."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from experiments.failover.experiment import EVENT_FIELDS, OUTCOME_FIELDS, TIMELINE_FIELDS
from experiments.failover.experiment import EXPERIMENT as FAILOVER
from experiments.framework.results import ResultDir
from experiments.hpn_segment.experiment import EXPERIMENT as SEGMENT
from experiments.hpn_segment.experiment import PATH_FIELDS, POLAR_FIELDS
from experiments.lb_compare.experiment import EXPERIMENT as LB_COMPARE
from experiments.lb_compare.experiment import FLOW_FIELDS, LINK_FIELDS, RUN_FIELDS
from experiments.rail_vs_clos.experiment import EXPERIMENT as RAIL_VS_CLOS
from experiments.rank_mapping.experiment import EXPERIMENT as RANK_MAPPING
from experiments.rank_mapping.experiment import MAXED
from experiments.scaling.experiment import EXPERIMENT as SCALING
from experiments.scaling.experiment import POINT_FIELDS
from experiments.straggler.experiment import EXPERIMENT as STRAGGLER
from experiments.straggler.experiment import ITERATION_FIELDS, RANK_FIELDS, VERDICT_FIELDS
from experiments.topology_aware.experiment import COLLECTIVE_FIELDS, STEP_FIELDS
from experiments.topology_aware.experiment import EXPERIMENT as TOPOLOGY_AWARE
from jobs import compare

PNG = b"\x89PNG\r\n\x1a\n"


def table(result: ResultDir, name: str, fields: Sequence[str],
          rows: Sequence[dict[str, Any]] = ()) -> None:
    result.write_csv(name, rows, fields)


def drawn(result: ResultDir, plots: list[Path]) -> list[str]:
    """The plots' names, each checked to be a PNG file in the result directory."""
    for path in plots:
        assert path.parent == result.path and path.read_bytes().startswith(PNG), path
    return [path.name for path in plots]


def busbw(order: str, size: int, rep: int, gbs: float, flows: int) -> dict[str, Any]:
    return {"order": order, "size": size, "rep": rep, "algorithm": "hd", "busbw_gbs": gbs,
            "complete": 1, "wrong": 0, "max_link_flows": flows}


def iteration(order: str, index: int, total: float, exposed: float) -> dict[str, Any]:
    return {"order": order, "iteration": index, "iteration_s": total, "compute_s": total - exposed,
            "exposed_s": exposed, "communication_s": exposed, "slowest_nic": "h0-eth0"}


def test_job_tables_of_a_run_stopped_midway_summarise_and_plot_what_it_measured(
        tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    # naive: both sizes and its training; remap: the first size, then Ctrl-C
    measured = [busbw("naive", 65536, 0, 2.0, 2), busbw("naive", 65536, 1, 4.0, 2),
                busbw("naive", 262144, 0, 5.0, 2), busbw("remap", 65536, 0, 6.0, 1)]
    compare.write_tables(result, "order", measured, [iteration("naive", 0, 1.5, 0.5)], MAXED)
    assert [list(r.values()) for r in result.read_csv("summary.csv")] == [
        ["naive", "65536", "3.0", "1.5", "0.5", "2.0"],
        ["naive", "262144", "5.0", "1.5", "0.5", "2.0"],
        ["remap", "65536", "6.0", "", "", "1.0"]]  # no 262144 row: never measured
    assert len(result.read_csv("busbw.csv")) == 4 and len(result.read_csv("iterations.csv")) == 1
    assert drawn(result, RANK_MAPPING.plot(result)) == ["busbw.png", "iteration.png"]


def test_job_plots_before_the_first_training_draw_busbw_only(tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    compare.write_tables(result, "fabric", [{**busbw("hpn7", 65536, 0, 3.0, 0), "fabric": "hpn7",
                                             "agg_bytes": 0}], [], {"agg_bytes": sum})
    assert result.read_csv("summary.csv")[0]["iteration_s"] == ""
    assert drawn(result, RAIL_VS_CLOS.plot(result)) == ["busbw.png"]
    assert not (tmp_path / "iteration.png").exists()


def test_scaling_draws_the_rates_it_measured(tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    table(result, "points.csv", POINT_FIELDS, [
        {"link_mbps": 5.0, "model_gbps": 200.0, "busbw_gbs": 4.1, "iteration_s": 1.6,
         "compute_s": 1.2, "exposed_s": 0.4, "efficiency": 0.75}])
    assert drawn(result, SCALING.plot(result)) == ["scaling.png"]


def test_straggler_draws_the_healthy_phase_alone_and_nothing_before_it(tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    for name, fields in (("iterations.csv", ITERATION_FIELDS), ("ranks.csv", RANK_FIELDS),
                         ("verdict.csv", VERDICT_FIELDS)):
        table(result, name, fields)
    assert STRAGGLER.plot(result) == []  # interrupted during the healthy training
    table(result, "iterations.csv", ITERATION_FIELDS, [
        {"phase": "healthy", "iteration": 0, "iteration_s": 1.4, "compute_s": 1.0,
         "exposed_s": 0.4}])
    table(result, "ranks.csv", RANK_FIELDS, [
        {"phase": "healthy", "rank": r, "nic": f"h{r}-eth0", "own_iteration_s": 1.3 + r / 10}
        for r in range(4)])
    table(result, "verdict.csv", VERDICT_FIELDS, [{"phase": "healthy", "match": 1}])
    assert drawn(result, STRAGGLER.plot(result)) == ["iterations.png", "ranks.png"]


def test_failover_draws_once_a_trial_is_measured(tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    result.write_params("failover", {"fail_s": 4.0})
    for name, fields in (("outcomes.csv", OUTCOME_FIELDS), ("timeline.csv", TIMELINE_FIELDS),
                         ("events.csv", EVENT_FIELDS)):
        table(result, name, fields)
    assert FAILOVER.plot(result) == []  # interrupted in the first trial
    table(result, "outcomes.csv", OUTCOME_FIELDS, [
        {"kind": "uplink", "trial": 0, "target": "s0-s4", "flow": f"f{i}", "crossed": i % 2,
         "loss_window_ms": 12.5 * i, "lost": i, "recovered": 1} for i in range(4)])
    table(result, "timeline.csv", TIMELINE_FIELDS, [
        {"kind": "uplink", "trial": 0, "flow": "f1", "t_s": t / 100, "goodput_bps": 5e7}
        for t in range(-20, 20)])
    assert drawn(result, FAILOVER.plot(result)) == ["timeline.png", "loss_windows.png"]


def test_segment_draws_the_parts_that_have_rows(tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    table(result, "paths.csv", PATH_FIELDS, [
        {"class": "same-rail", "flow": f"f{i}", "switch_hops": 1, "switches": "tor0",
         "aggs": "", "plane": "A", "model_paths": 1} for i in range(3)])
    table(result, "polarisation.csv", POLAR_FIELDS)  # Ctrl-C before its first trial
    assert drawn(result, SEGMENT.plot(result)) == ["paths.png"]


def test_topology_aware_draws_the_orders_whose_collective_ended(tmp_path: Path) -> None:
    result = ResultDir(tmp_path)
    table(result, "collectives.csv", COLLECTIVE_FIELDS, [
        {"part": "bigraph", "order": "naive", "total_s": 2.5}])
    table(result, "steps.csv", STEP_FIELDS, [  # hdrm stopped after its first step
        {"part": "bigraph", "order": order, "step": step, "measured_max_link_flows": 2,
         "model_max_link_flows": 2} for order, steps in (("naive", 4), ("hdrm", 1))
        for step in range(steps)])
    assert drawn(result, TOPOLOGY_AWARE.plot(result)) == ["bigraph_hd.png"]


@pytest.mark.parametrize("runs", [0, 1])
def test_lb_compare_draws_the_runs_it_made(tmp_path: Path, runs: int) -> None:
    result = ResultDir(tmp_path)
    table(result, "runs.csv", RUN_FIELDS, [
        {"fabric": "leafspine", "scenario": "even", "mode": "ecmp", "tags": 1, "label": "ecmp",
         "flows": 4, "seed": 0, "uplinks": 4, "imbalance": 1.5, "slowdown": 1.2}][:runs])
    table(result, "flows.csv", FLOW_FIELDS)
    table(result, "links.csv", LINK_FIELDS)
    expected = ["imbalance.png", "completion_cdf.png"] if runs else []
    assert drawn(result, LB_COMPARE.plot(result)) == expected
