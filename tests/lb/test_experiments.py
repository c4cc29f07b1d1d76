"""`lb-compare --quick` and `topology-aware --quick` end to end on Mininet + p4switch, their
output files checked for what they must show (fabric names prefixed `lx`, ports moved)."""

from __future__ import annotations

import json

import pytest

from experiments.framework import execute
from experiments.framework.ballsbins import expected_imbalance
from experiments.framework.registry import get
from tests.ports import EXPERIMENT_RUNS

pytestmark = [pytest.mark.mininet, pytest.mark.slow, pytest.mark.root]
ISOLATED = EXPERIMENT_RUNS["lb"].overrides


def run_quick(name: str, tmp_path, **overrides):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    out = tmp_path / name
    for attempt in range(3):  # another run may briefly hold an interface name
        try:
            return execute(get(name), quick=True, target="p4switch", out=out / str(attempt),
                           overrides={**ISOLATED, **overrides}, progress=lambda _line: None)
        except Exception as err:
            if "File exists" not in str(err) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def png(path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_lb_compare_quick(tmp_path):
    result = run_quick("lb-compare", tmp_path)
    params = json.loads((result.path / "params.json").read_text())
    assert params["status"] == "complete"
    p = params["params"]
    runs = result.read_csv("runs.csv")
    even = [r for r in runs if r["scenario"] == "even"]
    labels = {r["label"] for r in even}
    gaps = [f"flowlet {gap / 1000:g} ms" for gap in p["flowlet_gaps_us"]]
    assert labels == {"ecmp", *gaps, "dlb", "qdlb", "dlb untagged"}
    per_flow = p["flow_bytes"] // 1024  # packets of 1024 bytes
    asymmetric = len(p["scenarios"]) - 1
    assert len(runs) == p["seeds"] * (6 * len(p["flows"]) + asymmetric * len(
        p["scenario_modes"]) * len(p["scenario_flows"]))
    for r in runs:
        n, links = int(r["flows"]), int(r["uplinks"])
        assert r["complete"] == "1", f"{r['scenario']} {r['label']} N={n}: flows incomplete"
        assert float(r["expected_ecmp"]) == pytest.approx(expected_imbalance(n, links), abs=1e-3)
        assert float(r["slowdown"]) >= 0.9
    whole_flow_rows = 0
    for r in even:
        n, links = int(r["flows"]), int(r["uplinks"])
        if r["label"] == "dlb":  # every flow sprayed evenly over the 4 uplinks
            assert float(r["imbalance"]) < 1.1, r
            assert int(r["packets"]) == n * per_flow and r["uplinks_used"] == str(links)
            assert r["naks"] == "0", "tagged reordering must not draw NAKs"
        if r["label"] == "ecmp" and r["retransmitted_packets"] == "0":
            # whole flows per uplink: max/mean is (flows on one) * links/n. A run that lost a
            # packet carries go-back-N's resends on top (hundreds of packets), which this does
            # not model: on a busy machine a starved switch can drop one (ring_drops)
            on_busiest = float(r["imbalance"]) * n / links
            assert on_busiest == pytest.approx(round(on_busiest), abs=0.1), r
            whole_flow_rows += 1
        if r["label"] == "dlb untagged":  # reordering read as loss: NAKs and go-back-N
            assert int(r["naks"]) > 0 and int(r["retransmitted_packets"]) > 0, r
    ecmp_rows = [r for r in even if r["label"] == "ecmp"]
    assert whole_flow_rows >= len(ecmp_rows) - 1, [  # at most one lossy ECMP run of the four
        (r["flows"], r["seed"], r["retransmitted_packets"], r["ring_drops"]) for r in ecmp_rows]
    # Where ECMP hashes several whole flows onto one uplink, its queue holds hundreds of
    # packets; spraying keeps every uplink's queue below that (the queues' deepest enqueue,
    # read from the program's telemetry register after each run). The rings' drops are read.
    ecmp_peak = max(int(r["uplink_queue_peak"]) for r in even if r["label"] == "ecmp")
    assert ecmp_peak >= 100, [r["uplink_queue_peak"] for r in even if r["label"] == "ecmp"]
    assert all(int(r["uplink_queue_peak"]) < ecmp_peak for r in even if r["label"] == "dlb")
    assert all(r["ring_drops"].isdigit() for r in runs), {r["ring_drops"] for r in runs}
    # One slower uplink: the queue-aware mode steers around it, blind spraying does not. Per
    # seed, by the share of the bytes the slow (first) uplink carried: 2048 packets per run at
    # N = 8, so 0.02 below an even share is 41 packets steered away. (Which mode finishes first is not
    # asserted: at N = 8 the difference is within the run-to-run spread, even in the shipped
    # example run, examples/results/lb-compare/quick.)
    share = {(r["label"], r["seed"]): float(r["first_uplink_share"]) for r in runs
             if r["scenario"] == "slow-uplink" and r["label"] in ("dlb", "qdlb")}
    even_share = 1 / int(runs[0]["uplinks"])
    seeds = {seed for _, seed in share}
    assert len(seeds) == p["seeds"], share
    for seed in seeds:
        assert share["dlb", seed] == pytest.approx(even_share, abs=0.01), share
        assert share["qdlb", seed] <= even_share - 0.02, share
    flows = result.read_csv("flows.csv")
    assert len(flows) == sum(int(r["flows"]) for r in runs)
    for f in flows:
        if f["label"] in ("dlb", "qdlb"):
            assert f["tagged"] == f["packets"], f
        else:
            assert f["tagged"] == "0", f
    assert {"imbalance.png", "completion_cdf.png", "scenarios.png", "tags.png"} <= set(
        params["plots"])
    for name in ("imbalance.png", "completion_cdf.png", "scenarios.png", "tags.png"):
        assert png(result.path / name)


def test_topology_aware_quick(tmp_path):
    result = run_quick("topology-aware", tmp_path)
    by_order = {(r["part"], r["order"]): r for r in result.read_csv("collectives.csv")}
    assert set(by_order) == {("aipod", "naive"), ("aipod", "aware"), ("bigraph", "naive"),
                             ("bigraph", "hdrm")}
    assert all(r["complete"] == "1" for r in by_order.values())
    naive, aware = by_order["aipod", "naive"], by_order["aipod", "aware"]
    # The model: every naive ring hop crosses the superspine, 2 of 8 topology-aware ones do.
    assert int(aware["model_superspine_packets"]) * 4 == int(naive["model_superspine_packets"])
    for row in (naive, aware):  # counters see the data plus each flow's ACK and ICMP answer
        data, seen = int(row["model_superspine_packets"]), int(row["superspine_packets"])
        assert data <= seen <= data * 1.5, row
    steps = [s for s in result.read_csv("steps.csv") if s["part"] == "bigraph"]
    hdrm = [s for s in steps if s["order"] == "hdrm"]
    plain = [s for s in steps if s["order"] == "naive"]
    assert [s["model_conflicts"] for s in hdrm] == ["0"] * len(hdrm)
    assert [s["measured_conflicts"] for s in hdrm] == ["0"] * len(hdrm)
    assert all(s["measured_max_link_flows"] == "1" for s in hdrm if s["flows"] != "0")
    assert any(int(s["model_conflicts"]) > 0 for s in plain)
    for s in plain:  # where the model knows the paths, the counters agree
        assert int(s["measured_max_link_flows"]) >= int(s["model_max_link_flows"]), s
    params = json.loads((result.path / "params.json").read_text())
    assert png(result.path / "aipod_ring.png") and png(result.path / "bigraph_hd.png")
    assert set(params["plots"]) == {"aipod_ring.png", "bigraph_hd.png"}
