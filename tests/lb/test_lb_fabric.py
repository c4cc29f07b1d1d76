"""Load balancing on a real leaf-spine in Mininet on p4switch (names prefixed `lb`).

Two leaves, two spines, two NICs per leaf: every flow from leaf 0 to leaf 1 has two
equal-cost paths, and the uplink it takes shows in leaf 0's tx port counters. The program is
swapped at run time by the tests that need another mode (which is itself under test).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.lb import LbError, program_path
from controller.pipeline import build_pipeline
from controller.routes import default_hash_seed
from experiments.framework.engine_switch import LbSwitch, colliding_sports, roce_frame
from experiments.framework.lb_lab import FlowSpec, LbLab, LinkLoads
from tests.ports import FABRICS
from topos import build_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.slow, pytest.mark.root]

LEAF, SPINES = "lbleaf0", ("lbspine0", "lbspine1")
SRC, DST = "lbh0n0", "lbh2n0"
PACKET = 1024  # RDMA payload bytes per packet
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = FABRICS["lb-fabric"].apply(
        build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2))
    for attempt in range(3):  # another run may briefly hold an interface name
        try:
            running = LbLab(spec, mode="ecmp", log_dir=tmp_path_factory.mktemp("lb-fabric"))
            running.start()
            break
        except Exception as err:  # retried only for an interface-name clash
            if "File exists" not in str(err) or attempt == 2:
                raise
    try:
        yield running
    finally:
        running.stop()


def in_mode(lab: LbLab, mode: str, gap_us: int | None = None) -> None:
    if lab.mode != mode or (mode == "flowlet" and lab.flowlet_gap_us != gap_us):
        lab.switch_mode(mode, gap_us)
    assert lab.lb.mode == mode


def uplink_packets(loads: LinkLoads) -> dict[str, int]:
    return {spine: loads.packets.get((LEAF, spine), 0) for spine in SPINES}


def in_flows(uplinks: dict[str, int], per_flow: int = 16) -> list[int]:
    """Uplink packet counts in flows of `per_flow` packets, sorted. Rounding absorbs the odd
    packet that is not data: the sending host's kernel answers each ACK with an ICMP port
    unreachable (no socket on UDP 4791 there), hashed onto any path."""
    return sorted(round(n / per_flow) for n in uplinks.values())


def send(lab: LbLab, flows: list[FlowSpec], rate_bps: float = 2e6, *,
         sender: dict | None = None, qp: dict | None = None, **receiver):
    before = lab.link_counters()
    outcomes = lab.run_flows(flows, rate_bps=rate_bps, receiver=receiver or None,
                             sender=sender, qp=qp)
    for o in outcomes:
        assert o.complete, f"{o.flow.name}: {o.bytes} of {o.flow.bytes} bytes, {o.lost} lost"
    return outcomes, uplink_packets(lab.link_counters() - before)


def ip(lab: LbLab, nic: str) -> str:
    return lab.spec.nic(nic).ip


def test_ecmp_puts_a_hash_colliding_pair_of_flows_on_one_path(lab):
    in_mode(lab, "ecmp")
    ports = sorted(lab.spec.port_to(LEAF, spine) for spine in SPINES)
    seed = default_hash_seed(LEAF)
    src_ip, dst_ip = ip(lab, SRC), ip(lab, DST)
    pair = next(colliding_sports(ports, seed, src_ip=src_ip, dst_ip=dst_ip))
    engine = LbSwitch("ecmp", ports, seed=seed)
    port_of = {s: engine.egress_port(roce_frame(s, src_ip=src_ip, dst_ip=dst_ip))
               for s in range(pair[0], pair[0] + 64)}
    apart = next(s for s, p in port_of.items() if p != port_of[pair[0]])

    size = 16 * PACKET
    _, together = send(lab, [FlowSpec(SRC, DST, 1, pair[0], size),
                             FlowSpec(SRC, DST, 2, pair[1], size)])
    assert in_flows(together) == [0, 2], f"colliding pair {pair}: {together}"
    _, split = send(lab, [FlowSpec(SRC, DST, 3, pair[0], size),
                          FlowSpec(SRC, DST, 4, apart, size)])
    assert in_flows(split) == [1, 1], f"pair ({pair[0]}, {apart}): {split}"


def bursts(lab: LbLab, count: int, pause_s: float, sport: int) -> list[dict[str, int]]:
    """`count` messages of one flow (16 packets, 4 ms apart), `pause_s` of silence between."""
    out = []
    for i in range(count):
        if i:
            time.sleep(pause_s)  # the idle period between two flowlets is the test's input
        _, uplinks = send(lab, [FlowSpec(SRC, DST, 10 + i, sport, 16 * PACKET)])
        out.append(uplinks)
    return out


def test_flowlet_a_flow_keeps_its_path_inside_the_gap_and_moves_only_after_one(lab):
    in_mode(lab, "flowlet", 150_000)
    seen = bursts(lab, 6, pause_s=0.5, sport=50123)
    for uplinks in seen:
        assert in_flows(uplinks) == [0, 1], f"a burst was split across paths: {seen}"
    used = {spine for uplinks in seen for spine, n in uplinks.items() if n >= 8}
    assert used == set(SPINES), f"no new path after any gap: {seen}"


def test_flowlet_gap_set_at_run_time_takes_effect(lab):
    in_mode(lab, "flowlet", 150_000)
    lab.set_flowlet_gap(10_000_000)
    assert set(lab.lb.flowlet_gaps().values()) == {10_000_000}
    seen = bursts(lab, 5, pause_s=0.5, sport=50321)
    used = {spine for uplinks in seen for spine, n in uplinks.items() if n >= 8}
    assert len(used) == 1, f"a 10 s gap still let the flow move after 0.5 s pauses: {seen}"
    lab.set_flowlet_gap(150_000)
    assert set(lab.lb.flowlet_gaps().values()) == {150_000}
    seen = bursts(lab, 6, pause_s=0.5, sport=50321)
    used = {spine for uplinks in seen for spine, n in uplinks.items() if n >= 8}
    assert len(used) == 2, f"a 150 ms gap kept the flow on one path across 0.5 s pauses: {seen}"


def test_flowlet_gap_refused_outside_flowlet_mode(lab):
    in_mode(lab, "ecmp")
    with pytest.raises(LbError, match="ecmp.p4: it has no flowlet gap"):
        lab.set_flowlet_gap(1000)


def tc_rate(intf: str, mbit: float) -> None:
    subprocess.run(["tc", "class", "change", "dev", intf, "parent", "5:", "classid", "5:1",
                    "htb", "rate", f"{mbit:g}mbit", "burst", "15k"], check=True,
                   capture_output=True, text=True)


def test_dlb_sprays_one_flow_over_both_paths_and_the_receiver_restores_order(lab):
    in_mode(lab, "dlb")
    assert lab.lb.tagging_ports()[LEAF] == sorted(
        lab.spec.port_to(LEAF, nic) for nic in ("lbh0n0", "lbh1n0"))
    # One path slower than the other: packets through it arrive late, out of order.
    slow = lab.spec.links_of(SPINES[0])
    slow_intf = next(ln.end(SPINES[0]).intf for ln in slow if ln.other(SPINES[0]).node == "lbleaf1")
    rate = lab.spec.links_of(SPINES[0])[0].rate_mbps
    tc_rate(slow_intf, 1.0)
    try:
        # The slow path's queue holds packets ~0.2 s: the reorder buffer must wait that long.
        outcomes, uplinks = send(lab, [FlowSpec(SRC, DST, 20, 50777, 64 * PACKET)],
                                 rate_bps=4e6, record_delivery=True, reorder_timeout_s=2.0)
    finally:
        tc_rate(slow_intf, rate)
    (flow,) = outcomes
    assert in_flows(uplinks, 32) == [1, 1], f"not sprayed packet by packet: {uplinks}"
    assert flow.tagged == flow.packets == 64
    assert flow.out_of_order > 0, "the slow path reordered nothing: the test shows nothing"
    assert flow.reorder_occupancy_max > 0
    assert flow.record["reorder_skipped"] == 0
    assert flow.record["delivered_seqs"] == list(range(64)), "not delivered in order"


def test_mode_change_at_run_time_moves_a_flow_from_one_path_to_all(lab):
    in_mode(lab, "ecmp")
    flow = [FlowSpec(SRC, DST, 30, 50999, 16 * PACKET)]
    _, ecmp = send(lab, flow)
    assert in_flows(ecmp) == [0, 1]
    lab.switch_mode("dlb")
    _, dlb = send(lab, [FlowSpec(SRC, DST, 31, 50999, 16 * PACKET)])
    assert in_flows(dlb, 8) == [1, 1]
    lab.switch_mode("ecmp")
    _, back = send(lab, [FlowSpec(SRC, DST, 32, 50999, 16 * PACKET)])
    assert [n >= 8 for n in back.values()] == [n >= 8 for n in ecmp.values()]


def test_lb_command_switches_a_running_fabric_to_flowlet_with_its_gap(lab, tmp_path):
    model = tmp_path / "fabric.json"
    model.write_text(lab.spec.to_json())
    flowlet = build_pipeline(program_path("flowlet"), "p4switch")
    lab.ctl.close()  # the command connects as primary with the same election id
    try:
        done = subprocess.run(
            [sys.executable, "-m", "fabric_lab.cli", "lb", "--fabric", str(model), "--target",
             "p4switch", "--mode", "flowlet", "--flowlet-gap-us", "30000"],
            capture_output=True, text=True, timeout=120, cwd=ROOT)
    finally:
        lab.ctl.connect()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("flowlet.p4 on 4 switches")
    assert sorted(lines[1:]) == sorted(f"  {sw.name}: flowlet gap 30000 us"
                                       for sw in lab.spec.switches)
    for client in lab.ctl.clients.values():
        assert client.pipeline_cookie() == flowlet.cookie
    lab.switch_mode("ecmp")  # the lab's own view again
    _, uplinks = send(lab, [FlowSpec(SRC, DST, 40, 50999, 16 * PACKET)])
    assert in_flows(uplinks) == [0, 1]


def test_host_entropy_sprays_and_reps_leaves_the_uplink_that_trims(lab):
    """Ultra Ethernet's entropy: the switches hash as always, the sender picks one of 16 UDP
    source ports per packet. Sprayed in turn, one QP's packets cross both uplinks. With one
    uplink served at a fraction of the flow's rate and trimming past 8 packets, oblivious
    spraying keeps sending half the packets into it and gets them back trimmed; REPS recycles
    only the entropies that came back clean (an ACK every 4 packets brings them back) and
    leaves it: 0-6 trims against 96-155 in three runs."""
    from controller.congestion import CongestionConfig, TrimConfig, apply_congestion

    in_mode(lab, "ecmp")
    selective = {"selective": True}
    spray = {"entropies": 16, "spray": "oblivious"}
    flow = [FlowSpec(SRC, DST, 0x700, 50001, 300 * PACKET)]
    outcomes, uplinks = send(lab, flow, sender=selective, qp=spray, **selective)
    assert min(uplinks.values()) >= 300 // 8, uplinks  # both paths, neither a trickle
    assert sum(outcomes[0].sent["entropy_packets"]) == outcomes[0].sent["packets"]

    slow = lab.spec.port_to(LEAF, SPINES[1])
    ctl = lab.session.connected()
    uplink_ports = tuple(lab.spec.port_to(LEAF, s) for s in SPINES)
    trims = {}
    try:
        apply_congestion(ctl, CongestionConfig(trim=TrimConfig(depth=8, priority=0,
                                                               classes=(0,)),
                                               trim_ports=uplink_ports), [LEAF])
        lab.runtime_cli(LEAF, [f"set_queue_rate 40 {slow}"])  # a sixth of the flow's rate
        for policy, qpn in (("oblivious", 0x701), ("reps", 0x702)):
            flow = [FlowSpec(SRC, DST, qpn, 50101, 300 * PACKET)]
            outcomes, _ = send(lab, flow, sender={**selective, "ack_every": 4},
                               qp={**spray, "spray": policy}, **selective)
            trims[policy] = outcomes[0].record["trimmed"]
    finally:
        lab.runtime_cli(LEAF, [f"set_queue_rate 0 {slow}"])
        apply_congestion(ctl, CongestionConfig(), [LEAF])
    assert trims["oblivious"] > 0
    assert trims["reps"] < trims["oblivious"] / 2, trims
