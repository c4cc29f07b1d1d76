"""`fabric-lab perf` end to end on a small HPN 7.0 fabric, on p4switch and on BMv2: the output
parses as nccl-tests output, with a rank line per GPU, busbw = algbw x 2(n-1)/n, checked data,
the measured alpha and beta and every row's bound; bad arguments are all refused before
anything starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.jobs.test_perf_report import parse_nccl_tests
from tests.ports import FABRICS
from topos import build_fabric

ISOLATION = {"p4switch": FABRICS["jobs-perf-cli-p4switch"], "bmv2": FABRICS["jobs-perf-cli-bmv2"]}


def half_unit(cell: str) -> float:
    """Half a unit in the last place of a printed cell (nccl-tests prints 2 decimals, fewer
    when the column is too narrow)."""
    decimals = len(cell.split(".", 1)[1]) if "." in cell else 0
    return 0.5 * 10.0 ** -decimals


@pytest.mark.mininet  # ~6 s on p4switch, ~10 s on BMv2
@pytest.mark.root
@pytest.mark.parametrize("target", ["p4switch", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_perf_prints_the_nccl_tests_table(tmp_path: Path, target: str) -> None:
    if target == "p4switch":
        pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = ISOLATION[target].apply(build_fabric("hpn7", segments=1, aggs_per_plane=1,
                                                   rate_mbps=100.0))
    fabric = tmp_path / "fabric.json"
    fabric.write_text(spec.to_json())
    proc = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "perf", "all_reduce", "-b", "32K", "-e", "64K",
         "-f", "2", "-w", "0", "-n", "1", "--algo", "hierarchical", "--fabric", str(fabric),
         "--target", target],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    rows, avg, errors = parse_nccl_tests(out)
    assert [int(r["size"]) for r in rows] == [32768, 65536]
    assert [int(r["count"]) for r in rows] == [8192, 16384]
    assert errors == 0 and all(r["oop_wrong"] == r["ip_wrong"] == "0" for r in rows)
    for r in rows:
        assert (r["type"], r["redop"], r["root"]) == ("float", "sum", "-1")
        for side in ("oop", "ip"):
            algbw, busbw = float(r[f"{side}_algbw"]), float(r[f"{side}_busbw"])
            assert busbw == pytest.approx(algbw * 2 * 3 / 4, abs=0.011)  # printed to 0.01
            # algbw = S / time, in the modelled units (GB/s, us), each as precise as printed
            time_text, size = r[f"{side}_time"], int(r["size"])
            t, dt = float(time_text), half_unit(time_text)
            slack = half_unit(r[f"{side}_algbw"]) + 1e-9
            assert size / (t + dt) / 1e3 - slack <= algbw <= size / (t - dt) / 1e3 + slack, r
    busbws = [float(r[f"{s}_busbw"]) for r in rows for s in ("oop", "ip")]
    assert avg == pytest.approx(sum(busbws) / 4, abs=0.01)
    ranks = [line for line in out.splitlines() if line.startswith("#  Rank ")]
    assert len(ranks) == 4 and f"{ISOLATION[target].prefix}srv1 device  1" in ranks[3]
    assert "stands for 400 Gb/s" in out and "# Collective test starting: all_reduce_perf" in out
    assert "# Alpha-beta measured: alpha " in out
    bounds = [line for line in out.splitlines() if line.startswith("#   ") and " bound " in line]
    assert len(bounds) == 2  # one per row, after nccl-tests' trailer


def test_bad_arguments_are_all_refused_before_anything_starts(tmp_path: Path) -> None:
    fabric = tmp_path / "fabric.json"
    fabric.write_text(build_fabric("hpn7").to_json())
    proc = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "perf", "all_reduce", "-b", "4MB", "-n", "0",
         "-d", "float,complex", "-o", "xor", "--mtu", "200", "--algo", "pxn", "--link-mbps",
         "50", "--fabric", str(fabric)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    err = proc.stderr
    for words in ("-b: bad size", "-n must be >= 1", "-d: unknown datatype complex",
                  "-o: unknown reduction xor", "--mtu", "no algorithm 'pxn'",
                  "--link-mbps applies to a fabric name"):
        assert words in err, (words, err)
    assert "bringing up" not in err
