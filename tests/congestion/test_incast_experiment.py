"""`fabric-lab run incast --quick`, end to end, and what its output files hold."""

from __future__ import annotations

import csv
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.framework.telemetry import COLUMNS
from experiments.incast.experiment import EXPERIMENT
from experiments.incast.trial import SUMMARY_FIELDS

SETTINGS = EXPERIMENT.defaults["settings"]  # what a run does unless told: no trimming

ROOT = Path(__file__).resolve().parents[2]
# Half the experiment's rates. At its defaults the incast offers up to 50,000 packet-hops/s (3
# senders at the host rate and the victim, over 3 switches), near what the switches carry on two
# free cores (docs/rates.md): with a CPU-bound process beside it, the switches fall behind and a
# pause acts late, which eats into the congested port's headroom. PFC must lose nothing either
# way; this tests the mechanism, not the machine's spare CPU, so the thresholds leave the pause
# room to act late: XOFF 24 x 4 (fabric/host rate) = 96 packets of the 256-packet queue go to
# the dequeue-time rule's late view, 160 to the pause's reaction, 17 ms at the halved fabric
# rate. (The defaults' XOFF 40 leaves it 10 ms: the ecn+pfc trial once dropped 110 packets
# while the other test worker kept both cores busy.)
QUICK_PARAMS = ["-p", "host_pps=2400", "-p", "fabric_pps=9600", "-p", "victim_pps=1200",
              "-p", "xoff=24", "-p", "xon=10"]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.mininet
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_incast_quick_run_writes_complete_results(tmp_path: Path) -> None:
    out = tmp_path / "incast"
    done = subprocess.run([sys.executable, "-m", "fabric_lab.cli", "run", "incast", "--quick",
                           *QUICK_PARAMS, "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    params = json.loads((out / "params.json").read_text())
    assert params["status"] == "complete" and params["quick"] is True
    assert sorted(params["plots"]) == ["queues.png", "summary.png", "throughput.png"]
    for name in params["plots"]:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    summary = {r["setting"]: r for r in _rows(out / "summary.csv")}
    assert list(summary) == ["none", "ecn", "pfc", "ecn+pfc"] == list(SETTINGS)
    assert set(next(iter(summary.values()))) == set(SUMMARY_FIELDS)
    none, ecn, pfc, both = (summary[s] for s in SETTINGS)
    assert int(none["drops_congested"]) > 0 and int(none["retransmitted"]) > 0
    assert {r["drops_counted_by"] for r in summary.values()} == {"traffic manager tail drops"}
    assert all(r["ring_drops"].isdigit() for r in summary.values())  # p4switch reports them
    assert params["target"] == "p4switch" and params["target_requested"] == "auto"
    for row in (pfc, both):
        assert int(row["drops_congested"]) == 0
        assert int(row["messages_complete"]) == int(row["senders"])
        assert int(row["host_pause_frames"]) > 0 and float(row["spine_paused_s"]) > 0
    for row in (ecn, both):
        assert int(row["ecn_marked"]) > 0 and int(row["cnps"]) > 0
    for row in (none, ecn):
        assert int(row["host_pause_frames"]) == 0 and float(row["spine_paused_s"]) == 0
    assert int(none["ecn_marked"]) == 0 and int(none["cnps"]) == 0
    assert int(none["peak_queue_congested"]) >= 60  # the 64-packet queue overflowed

    series = _rows(out / "timeseries.csv")
    assert set(series[0]) == {"setting", *COLUMNS}
    for setting in SETTINGS:
        rows = [r for r in series if r["setting"] == setting]
        queues = {(r["switch"], r["port"]) for r in rows}
        assert len(queues) == 4
        times = sorted({float(r["t_s"]) for r in rows})
        assert times[0] < 0 < times[-1]  # samples before and after the incast start
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert sorted(gaps)[len(gaps) // 2] <= 0.1  # sampled at 100 ms or finer
        tx = [int(r["tx_packets"]) for r in rows if (r["switch"], r["port"]) == min(queues)]
        assert tx == sorted(tx)  # cumulative counters
