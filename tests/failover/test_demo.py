"""The live demo: its view (unit) and a short run on a real fabric that writes its plot."""

from __future__ import annotations

import csv
import io
import time

import pytest

from controller.reconverge import LinkEvent
from experiments.failover_lab import Failure, Flow, FlowRun
from experiments.live_demo import LiveView, columns, run_demo, sparkline
from tests.failover.fabrics import fo_fabric


def _run(bins: dict[str, dict[int, int]], t0: float) -> FlowRun:
    flows = [Flow("h0n0", "h3n0", "10.0.3.1", 256, 49408),
             Flow("h0n0", "h3n0", "10.0.3.1", 257, 49409)]
    run = FlowRun(flows, t0, 0.01)
    run.bins = bins
    return run


def test_sparkline_scales_to_full_and_clips():
    assert sparkline([0, 0.5, 1, 2], 1.0) == " ▄██"
    assert sparkline([1], 0) == " "


def test_columns_are_mbps_per_100ms():
    series = {i: 125 for i in range(0, 1000)}  # 125 B per 10 ms = 0.1 Mb/s
    series.update({i: 0 for i in range(900, 950)})
    cols = columns(series, 1000, 0.01)
    assert len(cols) == 50 and cols[-1] == pytest.approx(0.1)
    assert cols[-10:-5] == [0.0] * 5


def test_the_terminal_view_redraws_in_place_and_shows_the_failure_and_events():
    t0 = time.time() - 10
    bins = {"h0n0->h3n0#256": {i: 300 for i in range(1000)},
            "h0n0->h3n0#257": {i: (0 if 600 <= i < 640 else 300) for i in range(1000)}}
    out = io.StringIO()
    events = [LinkEvent("a~b", False, "port", t0 + 6.05, rerouted=t0 + 6.1, writes=4),
              LinkEvent("a~b", False, "port", t0 + 6.05)]  # the other end: no change
    view = LiveView("demo", 0.24, out, tty=True, events=events)
    failure = Failure("downlink", "a~b", t_fail=t0 + 6.0)
    run = _run(bins, t0)
    run.lossy_gaps = {"h0n0->h3n0#257": [[t0 + 6.0, t0 + 6.4, 40]]}
    view.tick(run, failure, "failed")
    text = out.getvalue()
    assert text.startswith("\x1b[H\x1b[J")
    assert "DOWNLINK FAILURE: a~b down" in text
    assert "h0n0->h3n0#257" in text and "400 ms" in text  # the 40 empty bins
    assert "a~b down (port): rerouted in 50 ms, 4 writes" in text
    assert "no route change" not in text


def test_without_a_terminal_the_view_prints_plain_lines():
    out = io.StringIO()
    view = LiveView("demo", 0.24, out, tty=False, events=[])
    run = _run({}, time.time())
    view.tick(run, Failure("uplink", ""), "before")
    view.events.append(LinkEvent("a~b", False, "port", 1.0, rerouted=1.05, writes=2))
    view._last = 0.0  # next tick is due
    view.tick(run, Failure("uplink", "a~b", t_fail=time.time()), "failed")
    lines = out.getvalue().splitlines()
    assert "\x1b" not in out.getvalue()
    assert lines[0].startswith("--- flows running")
    assert any(line.startswith("--- UPLINK FAILURE: a~b") for line in lines)
    assert any("controller: " in line and "a~b down (port): rerouted" in line for line in lines)
    assert all(line.startswith(("---", "t=")) for line in lines)


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.root
def test_the_short_demo_runs_on_hpn7_and_writes_its_plot(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    out = io.StringIO()
    plot = run_demo(spec=fo_fabric("hpn7"), before_s=2.0, fail_s=3.0, after_s=2.0,
                    out=tmp_path / "demo", stream=out, tty=False)
    text = out.getvalue()
    assert plot == tmp_path / "demo" / "timeline.png" and plot.stat().st_size > 10_000
    assert "downlink failure of " in text and f"timeline plot: {plot}" in text
    assert "--- DOWNLINK FAILURE" in text and "rerouted in" in text
    with (tmp_path / "demo" / "outcomes.csv").open() as f:
        outcomes = list(csv.DictReader(f))
    assert len(outcomes) == 8  # one row per flow
    crossed = [row for row in outcomes if row["crossed"] == "1"]
    assert crossed, "no flow crossed the failed downlink"
    assert all(int(row["lost"]) > 0 for row in crossed), "a downlink reroute cost nothing?"
