"""The live demo: its terminal view and measures (unit), its plot from CSV files, and real runs
on HPN 7.0: three recoveries whose recorded series show the difference, and a fabric that does
not recover failing the demo."""

from __future__ import annotations

import csv
import io
import json
import statistics
import time
from pathlib import Path

import pytest

from controller.reconverge import LinkEvent
from experiments.demo import DemoFailed, LiveView, columns, run_demo, sparkline
from experiments.demo.measure import longest_empty, not_back, stage_outcomes
from experiments.demo.plot import (
    EVENT_FIELDS,
    GAP_FIELDS,
    OUTCOME_FIELDS,
    STAGE_FIELDS,
    TIMELINE_FIELDS,
    plot_timeline,
)
from experiments.demo.run import overload_note
from experiments.demo.stages import Stage, rerouted_at
from experiments.demo.view import lossy_columns
from experiments.framework.failover_lab import Failure, Flow, FlowRun
from experiments.framework.results import ResultDir
from tests.failover.fabrics import fo_fabric

A, B, C, D = "h0n0->h3n0#256", "h0n0->h3n0#257", "h0n0->h3n0#258", "h0n0->h3n0#259"


def _run(bins: dict[str, dict[int, int]], t0: float) -> FlowRun:
    flows = [Flow("h0n0", "h3n0", "10.0.3.1", 256, 49408),
             Flow("h0n0", "h3n0", "10.0.3.1", 257, 49409)]
    run = FlowRun(flows, t0, 0.01)
    run.bins = bins
    return run


def test_sparkline_scales_to_full_and_clips():
    assert sparkline([0, 0.5, 1, 2], 1.0) == " ▄██"
    assert sparkline([1], 0) == " "


def test_columns_are_mbps_per_50ms():
    series = {i: 1280 for i in range(0, 1000)}  # 1280 B per 10 ms = 1.024 Mb/s
    series.update({i: 0 for i in range(900, 950)})
    cols = columns(series, 1000, 0.01)
    assert len(cols) == 60 and cols[-1] == pytest.approx(1.024)
    assert cols[-20:-10] == [0.0] * 10 and cols[-21] > 0 and cols[-10] > 0


def test_lossy_columns_mark_only_silences_that_lost_packets():
    t0 = 1000.0
    gaps = [[t0 + 9.02, t0 + 9.06, 20], [t0 + 9.5, t0 + 9.6, 0]]  # the second lost nothing
    marks = lossy_columns(gaps, 1000, t0, 0.01)
    assert sum(marks) == 2 and marks[-20] and marks[-19]


def test_the_terminal_view_redraws_in_place_with_loss_windows_stages_and_events():
    t0 = time.time() - 10
    bins = {A: {i: 1280 for i in range(1000)},
            B: {i: (0 if 800 <= i < 806 else 1280) for i in range(1000)}}
    out = io.StringIO()
    events = [LinkEvent("a~b", False, "port", t0 + 8.0, rerouted=t0 + 8.06, writes=4),
              LinkEvent("a~b", False, "port", t0 + 8.0)]  # the other end: no change
    view = LiveView("demo", 1.024, out, tty=True, events=lambda: events,
                    results=["uplink    x~y  3 flows cross it; no packet lost"],
                    notes=["web view: http://127.0.0.1:8700/"])
    stage = Stage("downlink", Failure("downlink", "a~b", t_fail=t0 + 8.0), 3.0, crossing=[B])
    run = _run(bins, t0)
    run.lossy_gaps = {B: [[t0 + 7.995, t0 + 8.06, 32]]}
    view.tick(run, stage, "failed")
    text = out.getvalue()
    assert text.startswith("\x1b[H\x1b[J")
    assert "DOWNLINK FAILURE (controller reroute): a~b down" in text
    assert "web view: http://127.0.0.1:8700/" in text
    row = next(line for line in text.splitlines() if B in line)
    assert row.startswith("*") and row.endswith("65 ms") and "\x1b[31m" in row  # red: lost
    other = next(line for line in text.splitlines() if A in line)
    assert "\x1b[31m" not in other and other.endswith("0 ms")
    assert "uplink    x~y  3 flows cross it" in text
    assert "a~b down (port): rerouted in 60 ms, 4 writes" in text
    assert "no route change" not in text


def test_without_a_terminal_the_view_prints_plain_lines():
    out = io.StringIO()
    events: list = []
    view = LiveView("demo", 1.024, out, tty=False, events=lambda: events)
    run = _run({}, time.time())
    view.tick(run, None, "before")
    events.append(LinkEvent("a~b", False, "port", 1.0))  # being rerouted
    view._last = 0.0  # next tick is due
    stage = Stage("uplink", Failure("uplink", "a~b", t_fail=time.time()), 3.0)
    view.tick(run, stage, "failed")
    assert "rerouted" not in out.getvalue()
    events[0].rerouted, events[0].writes = 1.05, 2  # the rewrite is done
    view._last = 0.0
    view.tick(run, stage, "failed")
    view._last = 0.0
    view.tick(run, stage, "failed")
    lines = out.getvalue().splitlines()
    assert sum("a~b down (port): rerouted in 50 ms" in line for line in lines) == 1
    assert "\x1b" not in out.getvalue()
    assert lines[0].startswith("--- flows running")
    assert any(line.startswith("--- UPLINK FAILURE (data-plane fast failover): a~b") for line in lines)
    assert any("controller: " in line and "a~b down (port): rerouted" in line for line in lines)
    assert all(line.startswith(("---", "t=")) for line in lines)


def test_recovered_means_delivering_without_loss_not_a_perfect_rate():
    t0 = 1000.0
    stage = Stage("downlink", Failure("downlink", "a~b", t_fail=t0 + 2.0, t_restore=t0 + 5.0), 3.0,
                  crossing=[B, C, D])
    bins = {A: {i: 1280 for i in range(800)},
            B: {i: (0 if i >= 200 else 1280) for i in range(800)},  # dark from the failure on
            C: {i: 640 if i >= 200 else 1280 for i in range(800)},  # half rate: a busy machine
            D: {i: 896 if i >= 200 else 1280 for i in range(800)}}  # still losing 30%
    records = {A: {"gaps": []}, B: {"gaps": []},  # B: no packet after its silence, no gap yet
               C: {"gaps": [[t0 + 2.0, t0 + 2.06, 30]]},  # the reroute, then no loss
               D: {"gaps": [[t0 + 2 + k * 0.01, t0 + 2.005 + k * 0.01, 2] for k in range(300)]}}
    out = {o.flow: o for o in stage_outcomes(stage, [A, B, C, D], records, bins, t0=t0,
                                             bin_s=0.01, size=256, nominal_per_bin=5)}
    assert out[A].recovered and out[A].expected and out[A].outage_s == 0
    assert not out[B].recovered and not out[B].expected and out[B].loss_window_s == 0
    assert out[B].outage_s == pytest.approx(3.0)
    assert out[C].recovered and out[C].loss_window_s == pytest.approx(0.06) and out[C].lost == 30
    assert not out[D].recovered
    assert not_back([A, B, C, D], records, bins, t0=t0, t_end=t0 + 8.0, bin_s=0.01, size=256,
                    nominal_per_bin=5) == [B]
    assert longest_empty(bins[B], 150, 260) == 60


def test_a_stage_is_rerouted_when_the_controller_finished_rewriting_around_its_link():
    t0 = 1000.0
    stage = Stage("silent", Failure("silent", "a~b", t_fail=t0), 4.0)
    events = [LinkEvent("a~b", False, "probe", seen=t0 - 5, rerouted=t0 - 4.9),  # an earlier failure
              LinkEvent("a~c", False, "probe", seen=t0 + 1, rerouted=t0 + 1.2),  # another link
              LinkEvent("b~a", False, "probe", seen=t0 + 3, rerouted=None)]  # still rewriting
    assert rerouted_at(events, stage) is None
    events += [LinkEvent("b~a", True, "probe", seen=t0 + 3.5, rerouted=t0 + 3.6),  # given back
               LinkEvent("b~a", False, "probe", seen=t0 + 3.1, rerouted=t0 + 3.8)]
    assert rerouted_at(events, stage) == t0 + 3.8


def test_ring_drops_say_the_machine_did_not_keep_up_and_suggest_half_the_rate():
    assert overload_note(None, 500.0) is None  # BMv2: the rings cannot be read
    assert overload_note(0, 500.0) is None
    note = overload_note(37, 500.0)
    assert note is not None and "dropped 37 frames" in note and "500 packets/s" in note
    assert note.endswith("try --pps 250 (docs/rates.md)")
    assert "try --pps 1 (" in (overload_note(3, 1.0) or "")  # never suggests 0


def test_the_timeline_plot_is_drawn_from_the_csv_files_alone(tmp_path: Path):
    result = ResultDir(tmp_path)
    result.write_params("demo", {"pps": 500, "bin_s": 0.01})
    result.write_csv("timeline.csv", [{"flow": f, "t_s": round(i * 0.01, 2),
                                       "packets": 0 if f == B and 300 <= i < 306 else 5}
                                      for f in (A, B) for i in range(700)], TIMELINE_FIELDS)
    result.write_csv("gaps.csv", [{"flow": B, "t_start_s": 2.995, "t_end_s": 3.06, "lost": 32}],
                     GAP_FIELDS)
    result.write_csv("stages.csv", [{"stage": 0, "kind": "downlink", "title": "controller reroute",
                                     "target": "a~b", "hold_s": 3, "t_fail_s": 3.0,
                                     "t_restore_s": 6.0, "t_settled_s": 6.1, "t_reroute_s": 3.06,
                                     "detect_ms": 2, "reroute_ms": 58, "crossing": B}], STAGE_FIELDS)
    result.write_csv("outcomes.csv", [
        {"stage": 0, "kind": "downlink", "target": "a~b", "flow": f, "crossed": int(f == B),
         "loss_window_ms": 65 if f == B else 0, "outage_ms": 60 if f == B else 0,
         "lost": 32 if f == B else 0, "recovered": 1} for f in (A, B)], OUTCOME_FIELDS)
    result.write_csv("events.csv", [], EVENT_FIELDS)
    plot = plot_timeline(result)
    assert plot == tmp_path / "timeline.png" and plot.stat().st_size > 10_000


def _csv(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_three_recoveries_show_the_difference_in_the_recorded_series(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    out = io.StringIO()
    # the default rate (`sudo make demo`'s): the assertions state the recoveries relative to it
    plot = run_demo(spec=fo_fabric("hpn7"), before_s=2.0, hold_s=2.0, between_s=1.5, after_s=2.0,
                    out=tmp_path / "demo", stream=out, tty=False)
    text = out.getvalue()
    assert plot == tmp_path / "demo" / "timeline.png" and plot.stat().st_size > 30_000
    assert f"timeline plot: {plot}" in text and "NOT RECOVERED" not in text
    assert "--- DOWNLINK FAILURE" in text and "rerouted in" in text
    params = json.loads((tmp_path / "demo" / "params.json").read_text())
    per_bin = params["params"]["pps"] * params["params"]["bin_s"]
    # frames the switches' receive rings dropped while the flows ran (runtime CLI port_stats)
    drops = params["switch_rx_dropped"]
    assert isinstance(drops, int) and drops >= 0
    assert ("receive rings dropped" in text) == (drops > 0)
    stages = {row["kind"]: row for row in _csv(tmp_path / "demo" / "stages.csv")}
    assert list(stages) == ["uplink", "downlink", "silent"]
    series: dict[str, dict[float, float]] = {}
    for row in _csv(tmp_path / "demo" / "timeline.csv"):
        series.setdefault(row["flow"], {})[round(float(row["t_s"]), 2)] = float(row["packets"])
    gaps: dict[str, list[tuple[float, float]]] = {}
    for row in _csv(tmp_path / "demo" / "gaps.csv"):
        gaps.setdefault(row["flow"], []).append((float(row["t_start_s"]), float(row["t_end_s"])))
    assert len(series) == 8

    def window(flow: str, start: float, end: float) -> list[tuple[float, float]]:
        return [(t, n) for t, n in sorted(series[flow].items()) if start <= t < end]

    # data-plane fast failover: the crossing flows stay at full rate (as much as the flows the
    # failure did not touch delivered meanwhile: the machine is busy), and the ToR's data plane,
    # not the controller, ends their loss: it loses what it sent into the link until its own port
    # monitor saw it go down (milliseconds; longer when a busy machine keeps the switch off the
    # CPU), and every lossy silence ends before the controller's reroute was done
    up = stages["uplink"]
    t_fail, t_restore = float(up["t_fail_s"]), float(up["t_restore_s"])
    t_reroute = float(up["t_reroute_s"]) if up["t_reroute_s"] else t_restore
    crossing = up["crossing"].split()
    assert crossing, "no flow crossed the failed uplink"
    untouched = [sum(n for _t, n in window(flow, t_fail, t_restore - 0.05))
                 for flow in series if flow not in crossing]
    assert untouched and statistics.median(untouched) > 0.5 * per_bin * (t_restore - t_fail) / 0.01
    for flow in crossing:
        delivered = sum(n for _t, n in window(flow, t_fail, t_restore - 0.05))
        assert delivered >= 0.9 * statistics.median(untouched), (flow, delivered, untouched)
        lossy = [g for g in gaps.get(flow, []) if t_fail - 0.05 <= g[0] < t_restore - 0.05]
        assert all(end < t_reroute for _start, end in lossy), (flow, lossy, t_reroute)

    # controller reroute: nothing in the data plane steers around a dead downlink, so the
    # controller must see the link go down and rewrite the source ToRs' routes while it is down.
    # What the senders sent into the dead link until then is lost; how much that is depends on
    # whether a sender got the CPU in those milliseconds (on a busy machine maybe none), so the
    # loss itself is not the guarantee. The guarantee: the reroute happens during the failure,
    # any loss of a crossing flow lies in a silence that began before the reroute was done
    # (none after it: the new routes avoid the link), and such a silence is what the timeline
    # shows (no packet in the bins inside it). The flows recovered (asserted below).
    down = stages["downlink"]
    t_fail, t_restore = float(down["t_fail_s"]), float(down["t_restore_s"])
    assert down["reroute_ms"] and down["t_reroute_s"], "no reroute event recorded"
    t_reroute = float(down["t_reroute_s"])
    assert t_fail <= t_reroute < t_restore, (t_fail, t_reroute, t_restore)
    crossing = down["crossing"].split()
    assert crossing, "no flow crossed the failed downlink"
    for flow in crossing:
        # silences that lost packets and overlap the failure (one that began before it, a
        # sender or receiver kept off the CPU, counts too), up to just before the restore
        lossy = [g for g in gaps.get(flow, []) if g[1] >= t_fail and g[0] < t_restore - 0.05]
        late = [g for g in lossy if g[0] > t_reroute + 0.05]  # a late receiver stamps late
        assert not late, f"{flow} lost packets after the reroute: {late}"
        for start, end in lossy:
            # the bins wholly between the two arrivals: the one holding the last packet before the
            # silence (a bin is [t, t + 0.01)) and the one holding the first after it are not, and
            # gaps.csv rounds the arrivals to 0.1 ms
            inside = [n for t, n in window(flow, start, end) if start + 1e-4 < t and t + 0.01 < end - 1e-4]
            assert all(n == 0 for n in inside), (flow, start, end, inside)

    # silent drop: lossy for the probe rounds, then isolated; every flow recovered
    outcomes = _csv(tmp_path / "demo" / "outcomes.csv")
    silent = [o for o in outcomes if o["kind"] == "silent" and o["crossed"] == "1"]
    assert silent and all(float(o["loss_window_ms"]) > 500 for o in silent)
    assert all(o["recovered"] == "1" for o in outcomes)
    assert stages["silent"]["t_reroute_s"], "the probes never isolated the dropping link"


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_a_fabric_that_does_not_recover_fails_the_demo_and_names_the_flows(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    out = io.StringIO()
    with pytest.raises(DemoFailed) as failed:  # no controller loop: nothing reroutes
        run_demo(spec=fo_fabric("hpn7"), kinds=["downlink"], before_s=1.5, hold_s=2.0,
                 after_s=1.5, out=tmp_path / "demo", stream=out, tty=False,
                 lab_options={"reconverge": False, "probes": False})
    text = out.getvalue()
    crossing = [row for row in _csv(tmp_path / "demo" / "outcomes.csv") if row["crossed"] == "1"]
    assert crossing and all(row["recovered"] == "0" for row in crossing)
    # no loop to wait for: the failure is held for hold_s, not until a reroute that never comes
    assert [float(row["hold_s"]) for row in _csv(tmp_path / "demo" / "stages.csv")] == [2.0]
    assert all(f"{row['flow']} did not recover from the downlink failure" in str(failed.value)
               for row in crossing)
    assert text.count("NOT RECOVERED") == len(crossing)
    assert failed.value.plot.exists()
    params = json.loads((tmp_path / "demo" / "params.json").read_text())
    assert params["status"] == "failed" and len(params["problems"]) >= len(crossing)


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
@pytest.mark.bmv2
def test_the_demo_recovers_on_bmv2(tmp_path):
    """BMv2 once died in the first reroute and the demo reported its dead flows as untouched.
    On BMv2 every stage recovers, the downlink through the controller's reroute."""
    # the default rate on BMv2 (150 packets/s per flow): an overloaded BMv2 drops packets of
    # flows on a good path, which this test would take for a flow that did not recover
    out = io.StringIO()
    run_demo(spec=fo_fabric("hpn7"), target="bmv2", kinds=("uplink", "downlink"), before_s=2.0,
             hold_s=2.0, between_s=1.5, after_s=2.0, out=tmp_path / "demo", stream=out,
             tty=False)
    assert "NOT RECOVERED" not in out.getvalue()
    params = json.loads((tmp_path / "demo" / "params.json").read_text())
    assert params["target"] == "bmv2"
    outcomes = _csv(tmp_path / "demo" / "outcomes.csv")
    assert {o["kind"] for o in outcomes} == {"uplink", "downlink"}
    assert all(o["recovered"] == "1" for o in outcomes)
    downlink = [o for o in outcomes if o["kind"] == "downlink" and o["crossed"] == "1"]
    assert downlink, "no flow crossed the failed downlink"
    # what the senders sent into the dead link before the reroute is lost, but whether they sent
    # any in those milliseconds depends on the machine's load: the reroute is the guarantee
    stage = next(row for row in _csv(tmp_path / "demo" / "stages.csv") if row["kind"] == "downlink")
    assert stage["reroute_ms"] and stage["t_reroute_s"], "no reroute event recorded"
    assert float(stage["t_fail_s"]) <= float(stage["t_reroute_s"]) < float(stage["t_restore_s"])
