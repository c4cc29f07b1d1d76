"""The diagnose rules on measurements made up for a small leaf-spine (no network): what each
symptom needs to be named, what keeps a healthy link unnamed, how the table reads; and the
command's errors without a running fabric."""

from __future__ import annotations

import pytest

from controller.diagnose.counters import PauseSampler, PortReader, Snapshot
from controller.diagnose.findings import (
    Directions,
    Finding,
    counter_drops,
    paused_queues,
    probe_drops,
    rank,
    serve_rates,
    slow_egresses,
)
from controller.diagnose.probes import SPORT_BASE, Flow, Frames, Probe, ProbePlan, decode
from controller.diagnose.run import Diagnosis
from fabric_lab.cli import main
from topos import build_fabric
from traffic.inband import HopRecord, IntReport

SPEC = build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2)
# h0n0 (leaf0:1), h1n0 (leaf0:2), h2n0 (leaf1:1), h3n0 (leaf1:2); leaf0:3/4 -> spine0:1/spine1:1,
# leaf1:3/4 -> spine0:2/spine1:2; switch ids leaf0 1, leaf1 2, spine0 3, spine1 4


def hop(switch_id: int, ingress: int, egress: int, *, qdepth: int = 0, ts: int = 0,
        tx: int = 0, latency: int = 0, mbps: int = 10) -> HopRecord:
    return HopRecord(switch_id, ingress, egress, qdepth, ts, latency, tx, mbps)


def report(*hops: HopRecord) -> IntReport:
    return IntReport(5, 0, hops)


def via_spine0(flow: Flow, *, last: HopRecord | None = None) -> IntReport:
    """h0n0 -> h3n0 over spine0."""
    return report(hop(1, 1, 3), hop(3, 1, 2), last or hop(2, 3, 2))


def test_serve_rate_counts_only_backlogged_pairs() -> None:
    # 1250 bytes every 1000 us = 10 Mb/s while the queue held packets; the third pair starts
    # from an empty queue (idle time in between) and says nothing about the rate
    records = [hop(2, 3, 2, qdepth=3, ts=0, tx=0), hop(2, 3, 2, qdepth=2, ts=1000, tx=1250),
               hop(2, 3, 2, qdepth=0, ts=2000, tx=2500), hop(2, 3, 2, qdepth=0, ts=9000, tx=3750)]
    assert serve_rates(records) == [10.0, 10.0]
    wrapped = [hop(2, 3, 2, qdepth=1, ts=0, tx=(1 << 32) - 100), hop(2, 3, 2, ts=100, tx=25)]
    assert serve_rates(wrapped) == [10.0]  # tx_bytes is modulo 2^32


def test_a_slow_egress_is_named_and_a_healthy_one_is_not() -> None:
    flow = Flow("h0n0", "h3n0", SPORT_BASE)
    probes = []
    for k in range(5):  # leaf1:2 serves 1 Mb/s of 10 backlogged; spine0:2 serves 10 Mb/s
        last = hop(2, 3, 2, qdepth=4, ts=10_000 * k, tx=1250 * k, latency=40_000)
        mid = hop(3, 1, 2, qdepth=2, ts=1000 * k, tx=1250 * k)
        probes.append(Probe(flow, 0, k, report(hop(1, 1, 3), mid, last)))
    directions = Directions(SPEC)
    (slow,) = slow_egresses(directions, probes)
    assert (slow.src, slow.dst, slow.symptom) == ("leaf1:2", "h3n0:0", "slow")
    assert slow.evidence["served_mbps"] == 1.0 and slow.evidence["pairs"] == 4
    assert slow.evidence["hop_latency_max_us"] == 40_000 and slow.score == pytest.approx(0.9)
    assert slow_egresses(directions, probes, {("leaf1", 2)}) == []  # found paused instead
    assert slow_egresses(directions, probes[:3]) == []  # two pairs are too few to judge


def test_counters_name_the_direction_that_loses_frames() -> None:
    before = Snapshot(0.0, rx={("spine0", 1): 100, ("leaf0", 3): 100},
                      tx={("leaf0", 3): 100, ("spine0", 1): 100})
    after = Snapshot(2.0, rx={("spine0", 1): 170, ("leaf0", 3): 198},
                     tx={("leaf0", 3): 200, ("spine0", 1): 200})
    (drop,) = counter_drops(SPEC, before, after)  # leaf0 -> spine0 lost 30 of 100
    assert (drop.link, drop.symptom, drop.score) == ("leaf0:3 -> spine0:1", "drops", 0.3)
    assert drop.evidence["lost"] == 30  # spine0 -> leaf0 lost 2 of 100: within the skew


def test_lost_probes_are_laid_on_the_link_the_counters_suspect() -> None:
    directions = Directions(SPEC)
    flow = Flow("h0n0", "h3n0", SPORT_BASE)
    probes = [Probe(flow, 0, k, via_spine0(flow) if k % 3 else None) for k in range(12)]
    other = Flow("h1n0", "h3n0", SPORT_BASE)  # leaf0:2 in, the same links on
    probes += [Probe(other, 0, k, report(hop(1, 2, 3), hop(3, 1, 2), hop(2, 3, 2)))
               for k in range(12)]
    (drop,) = probe_drops(directions, probes)  # 4 of 24 through leaf0:3 -> spine0:1 ...
    assert drop.evidence["probes_lost"] == 4 and drop.evidence["flows"] == 1
    # ... and through h0n0 -> leaf0, crossed by the lossy flow alone: fewer probes, taken first
    assert drop.src == "h0n0:0"
    (blamed,) = probe_drops(directions, probes, {("leaf0", 3)})
    assert blamed.link == "leaf0:3 -> spine0:1"


def test_a_queue_paused_most_of_the_time_is_named() -> None:
    directions = Directions(SPEC)
    sampler = PauseSampler(PortReader(SPEC, "p4switch"), interval_s=0.25)  # never connects
    for k in range(8):  # leaf0:1 paused in 7 samples of 8, leaf1:3 in 2
        sampler.add(Snapshot(k * 0.25, paused={("leaf0", 1): k > 0, ("leaf1", 3): k < 2},
                             depth={("leaf0", 1): 12 if k == 3 else 1}))
    before = Snapshot(0.0, pfc_rx={("leaf0", 1): 0, ("leaf1", 3): 5})
    after = Snapshot(2.0, pfc_rx={("leaf0", 1): 4, ("leaf1", 3): 9})
    (held,) = paused_queues(directions, before, after, sampler, tm_stats=True)
    assert (held.link, held.symptom) == ("leaf0:1 -> h0n0:0", "paused")
    assert held.evidence["pfc_frames_rx"] == 4 and held.evidence["paused_s"] == 1.75
    assert held.evidence["depth_max"] == 12 and held.score == 7 / 8
    # without the traffic manager's state (BMv2), pause frames received are the evidence
    named = paused_queues(directions, before, after, sampler, tm_stats=False)
    assert {f.src for f in named} == {"leaf0:1", "leaf1:3"}


def test_rank_merges_sources_and_puts_the_worst_first() -> None:
    a = Finding("leaf0:3", "spine0:1", "drops", 0.3, {"sent": 100, "lost": 30,
                                                     "from": "port counters"})
    b = Finding("leaf0:3", "spine0:1", "drops", 0.33, {"probes_sent": 96, "probes_lost": 32,
                                                      "from": "INT probes"})
    c = Finding("leaf1:2", "h3n0:0", "slow", 0.9, {"served_mbps": 1.0})
    ranked = rank([a, b, c])
    assert [f.symptom for f in ranked] == ["slow", "drops"]
    assert ranked[1].score == 0.33 and ranked[1].evidence["lost"] == 30
    assert ranked[1].evidence["probes_lost"] == 32
    assert ranked[1].evidence["from"] == "port counters, INT probes"


def test_the_table_and_json_say_the_same() -> None:
    f = Finding("leaf0:3", "spine0:1", "drops", 0.3, {"sent": 100, "received": 70, "lost": 30,
                                                     "seconds": 2.0, "from": "port counters"})
    d = Diagnosis("leafspine", "p4switch", 3.2, 576, 540, 4, [f])
    text = d.table()
    assert "540 of 576 INT probes" in text
    assert " 1  leaf0:3 -> spine0:1  drops     0.30  30 of 100 frames sent never arrived" in text
    data = d.to_dict()
    assert data["findings"][0]["rank"] == 1 and data["findings"][0]["link"] == f.link
    assert "no bad link found" in Diagnosis("leafspine", "p4switch", 1, 4, 4, 4, []).table()


def test_probe_frames_carry_their_id_and_flow() -> None:
    plan = ProbePlan.between(SPEC, ["h0n0", "h3n0"], flows=2)
    assert [(f.src, f.dst, f.sport) for f in plan.flows][:2] == [
        ("h0n0", "h3n0", SPORT_BASE), ("h0n0", "h3n0", SPORT_BASE + 1)]
    frames = Frames(SPEC)
    frame = frames.probe(frames.template(plan.flows[1]), 77)
    probe_id, got = decode(frame)  # type: ignore[misc]
    assert probe_id == 77 and got.hops == () and got.max_hops == 5
    assert len(ProbePlan.between(build_fabric("leafspine", leaves=4, hosts_per_leaf=4)).flows) \
        <= 240  # 16 NICs: one flow per pair


def test_the_command_says_when_no_fabric_runs(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("FABRIC_LAB_RUN_DIR", str(tmp_path))
    monkeypatch.delenv("FABRIC_LAB_FABRIC", raising=False)
    assert main(["diagnose"]) == 1
    assert capsys.readouterr().err.startswith("fabric-lab diagnose: no fabric is running")
    assert main(["diagnose", "--rounds", "0", "--burst", "0"]) == 2
    assert "--rounds must be >= 1, got 0; --burst must be >= 1, got 0" in capsys.readouterr().err
