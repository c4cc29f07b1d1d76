"""Experiment `lb-compare`: ECMP vs flowlet switching vs per-packet DLB on a real fabric.

Modes: `ecmp`, `flowlet` (each gap), `dlb` (per-packet round-robin spraying, blind to load),
`qdlb` (queue-aware DLB: the less loaded of two members by egress queue depth), and
`dlb-untagged` / `qdlb-untagged` (the same without reorder tags: the receivers' go-back-N takes
every reordering for a loss, NAKs it and the senders resend). Scenarios (`lb_scenarios`): `even`
uplinks, one `slow-uplink`, an uplink that `degrade`s mid-run; the asymmetric ones run
`scenario_modes` with `scenario_flows` flows. Senders and receivers run go-back-N (as RoCEv2 RC
NICs); retransmissions, NAKs and timeouts are reported per run and flow.

One Mininet fabric per entry of `fabrics`, p4switch (or BMv2) switches. N RoCEv2 flows (one
queue pair each, random UDP source ports per seed) go from the NICs under the first leaf to the
NICs under the leaf it reaches over the most equal-cost paths, all at once, one RDMA WRITE
message each, every NIC sending at its link rate shared by its flows: one collective step. For
every load-balancing mode (ECMP, flowlet with each gap, DLB; the program is swapped at run time,
the network stays up), every N and seed:
- utilisation imbalance of the source leaf's uplinks: max / mean of the bytes their tx counters
  (read over P4Runtime) grew by; for ECMP the balls-into-bins expectation next to it;
- per-flow throughput (bytes / its completion time) and its spread (coefficient of variation);
- job completion time = the slowest flow's, and its slowdown over the ideal (every flow at its
  NIC's share of the line rate);
- out-of-order fraction and reorder-buffer peak at the receivers.

Rates (docs/rates.md): `link_mbps` 0 (the default) gives every link of a fabric the rate that
leaves each flow `flow_mbps` (20 Mb/s) at the largest N: 20 x ceil(N / NICs under the source
leaf), 40 Mb/s on leafspine (4 NICs), 80 Mb/s on bigraph and hpn7 (2 NICs), so the source leaf
offers 160 Mb/s (about 18,400 frames/s) whatever the fabric. A flow is 256 packets (256 KB) and
the source leaf's uplink queues hold `uplink_depth` = 1024: where ECMP hashes several flows onto
one uplink its queue holds hundreds of packets (a 2-flow collision at N = 4 about 270), without
a drop. The go-back-N timer `rto_s` and the reorder timeout (1 s) outlast a full 1024-packet
uplink queue at a quarter of 40 Mb/s (0.94 s), so only a lost packet, never a queued one, is
resent. The flowlet gaps are 0.5 ms (about one packet interval of a 20 Mb/s flow, so jitter
starts new flowlets) and 50 ms.

Parameters `name_prefix` and `port_base` prefix every node and interface name and move the
switches' management ports, so a run can share the machine with another fabric.

Files: `runs.csv` (one row per scenario, mode, N, seed; with the deepest enqueue on the source
leaf's uplinks, `uplink_queue_peak`, and the frames the switches' receive rings dropped,
`ring_drops`: a switch that fell behind, not a queue), `flows.csv` (one row per flow),
`links.csv` (bytes per directed switch link per run); plots `imbalance.png` (imbalance vs N per
mode on even uplinks, the balls-into-bins line for ECMP), `completion_cdf.png` (CDF of the job
slowdown per mode, even uplinks), `scenarios.png` (slowdown and the slowed uplink's byte share
per scenario) and `tags.png` (goodput and packets resent with and without reorder tags).
"""

from __future__ import annotations

import functools
import math
import random
import statistics

from experiments.framework import (
    Experiment,
    ExperimentError,
    RunContext,
    isolated,
    scaled_fabric,
)
from experiments.framework.ballsbins import expected_imbalance
from experiments.framework.engine_switch import flow_index
from experiments.framework.lb_lab import FlowOutcome, FlowSpec, LbLab, LinkLoads
from experiments.lb_compare.plots import plot
from experiments.lb_compare.scenarios import UplinkRates, check_scenarios
from topos import FabricSpec
from topos.analysis import shortest_paths

RUN_FIELDS = ["fabric", "scenario", "mode", "gap_us", "tags", "label", "flows", "seed",
              "link_mbps", "uplinks", "imbalance",
              "expected_ecmp", "uplinks_used", "jct_s", "ideal_s", "slowdown", "tput_mean_bps",
              "tput_min_bps", "tput_max_bps", "tput_cv", "packets", "out_of_order",
              "ooo_fraction", "reorder_peak", "reorder_distance_max", "lost", "complete",
              "goodput_bps", "retransmitted_packets", "retransmitted_bytes", "naks", "timeouts",
              "first_uplink_share", "uplink_queue_peak", "ring_drops"]
FLOW_FIELDS = ["fabric", "scenario", "label", "flows", "seed", "flow", "sport", "bytes",
               "completion_s",
               "throughput_bps", "packets", "out_of_order", "reorder_occupancy_max",
               "reorder_distance_max", "reorder_skipped", "tagged", "lost",
               "retransmitted_packets", "naks", "timeouts"]
LINK_FIELDS = ["fabric", "scenario", "label", "flows", "seed", "link", "packets", "bytes"]
PER_PACKET = ("dlb", "qdlb")

# Scales that keep a fabric small enough for software switches (see docs/mechanisms/*.md).
SCALES = {
    "leafspine": {"leaves": 2, "spines": 4, "hosts_per_leaf": 4},
    "bigraph": {"switches_per_group": 4, "hosts_per_switch": 2},
    "fattree": {"k": 4},
    "aipod": {"rails": 2, "groups": 2, "servers_per_group": 2},
    # Dual-homed NICs send on port 0 (plane A): one hash stage, the ToR's uplinks.
    "hpn7": {"segments": 2, "servers_per_segment": 2, "nics_per_server": 2, "aggs_per_plane": 2},
}


def label(mode: str, gap_us: int = 0, tags: bool = True) -> str:
    if mode == "flowlet":
        return f"flowlet {gap_us / 1000:g} ms"
    return mode if tags or mode not in PER_PACKET else f"{mode} untagged"


def modes(params: dict) -> list[tuple[str, int, bool]]:
    """(mode, flowlet gap, switches tag) for every mode named in the parameters."""
    out = []
    for mode in params["modes"]:
        if mode == "flowlet":
            out += [("flowlet", int(gap), True) for gap in params["flowlet_gaps_us"]]
        elif mode in ("ecmp", *PER_PACKET):
            out.append((mode, 0, True))
        elif mode.endswith("-untagged") and mode.removesuffix("-untagged") in PER_PACKET:
            out.append((mode.removesuffix("-untagged"), 0, False))
        else:
            raise ExperimentError(f"lb-compare: unknown mode {mode!r}; choose from ecmp, "
                                  f"flowlet, dlb, qdlb, dlb-untagged, qdlb-untagged")
    return out


def runs_of(params: dict, mode: str, gap: int, tags: bool) -> list[tuple[str, int]]:
    """(scenario, flows) this mode runs: `even` with every N, the asymmetric scenarios with
    `scenario_flows` when the mode is one of `scenario_modes`."""
    out = []
    name = mode if tags else f"{mode}-untagged"
    for scenario in check_scenarios(list(params["scenarios"])):
        if scenario == "even":
            out += [(scenario, int(n)) for n in params["flows"]]
        elif name in params["scenario_modes"]:
            out += [(scenario, int(n)) for n in params["scenario_flows"]]
    return out


def fabric(name: str, params: dict) -> FabricSpec:
    """Fabric `name` at the run's scale, every link at `link_mbps(spec, params)`."""
    spec = scaled_fabric(name, params, SCALES.get(name, {}), rate_mbps=1.0,
                         queue_pkts=params["queue_pkts"])
    spec = scaled_fabric(name, params, SCALES.get(name, {}), rate_mbps=link_mbps(spec, params),
                         queue_pkts=params["queue_pkts"])
    return isolated(spec, params)


def link_mbps(spec: FabricSpec, params: dict) -> float:
    """`link_mbps` when set, else the rate leaving every flow `flow_mbps` at the largest N:
    flow_mbps x the most flows a source NIC carries (flows round-robin over the NICs under the
    source leaf)."""
    if params["link_mbps"] > 0:
        return float(params["link_mbps"])
    most = max(int(n) for n in [*params["flows"], *params["scenario_flows"]])
    nics = len(nics_under(spec, end_leaves(spec)[0]))
    return float(params["flow_mbps"]) * math.ceil(most / nics)


def end_leaves(spec: FabricSpec) -> tuple[str, str]:
    """The first switch NICs attach to, and the leaf it reaches over the most equal-cost paths
    (the last such in fabric order): where load balancing has the most to choose from."""
    leaves = [sw.name for sw in spec.switches if nics_under(spec, sw.name)]
    if len(leaves) < 2:
        raise ExperimentError(f"lb-compare: {spec.name} has fewer than two leaves")
    src = nics_under(spec, leaves[0])[0]
    paths = {leaf: len(shortest_paths(spec, src, nics_under(spec, leaf)[0]))
             for leaf in leaves[1:]}
    most = max(paths.values())
    best = [leaf for leaf in leaves[1:] if paths[leaf] == most]
    first = spec.switch(leaves[0])
    aligned = [leaf for leaf in best  # a rail-optimised fabric: same rail and plane
               if (spec.switch(leaf).rail, spec.switch(leaf).plane) == (first.rail, first.plane)]
    return leaves[0], (aligned or best)[-1]


def nics_under(spec: FabricSpec, leaf: str) -> list[str]:
    return [n for n in spec.neighbours(leaf) if not spec.is_switch(n)]


def uplinks(spec: FabricSpec, leaf: str) -> list[tuple[str, str]]:
    return [(leaf, n) for n in spec.neighbours(leaf) if spec.is_switch(n)]


def plan(spec: FabricSpec, n: int, seed: int, flow_bytes: int,
         taken: set[int] | None = None, qpn_base: int = 0) -> list[FlowSpec]:
    """n flows, source and destination NICs round-robin, random distinct source ports, QPNs
    from `qpn_base` + 1 (a run's own QPNs: a late packet of an earlier run is not taken for
    one of its flows' packets). With
    `taken`, ports whose per-flow register index is in it are skipped (and theirs added): a DLB
    switch numbers a flow's packets on from where an earlier flow with that index left off."""
    first, last = end_leaves(spec)
    srcs, dsts = nics_under(spec, first), nics_under(spec, last)
    ip = {nic.name: nic.ip for nic in spec.host_nics()}
    rng = random.Random(f"lb-compare-{spec.name}-{n}-{seed}")
    flows: list[FlowSpec] = []
    for i in range(n):
        src, dst = srcs[i % len(srcs)], dsts[i % len(dsts)]
        while True:
            sport = rng.randrange(49152, 65536)
            if any(f.sport == sport for f in flows):
                continue
            if taken is None:
                break
            index = flow_index(sport, src_ip=ip[src], dst_ip=ip[dst])
            if index not in taken:
                taken.add(index)
                break
        flows.append(FlowSpec(src, dst, qpn=qpn_base + 1 + i, sport=sport, bytes=flow_bytes))
    return flows


def imbalance(loads: LinkLoads, links: list[tuple[str, str]]) -> tuple[float, int]:
    """(max / mean bytes over `links`, links that carried more than 1% of the mean)."""
    values = [loads.bytes.get(link, 0) for link in links]
    mean = sum(values) / len(values)
    if mean <= 0:
        raise RuntimeError("no traffic on the source leaf's uplinks: flows did not run")
    return max(values) / mean, sum(v > 0.01 * mean for v in values)


def ideal_s(flows: list[FlowSpec], rate_bps: float) -> float:
    """Every flow at its NIC's share of the line rate: the slowest such flow's time."""
    per_src = {f.src: sum(g.src == f.src for g in flows) for f in flows}
    return max(f.bytes * 8 / (rate_bps / per_src[f.src]) for f in flows)


def run_row(spec: FabricSpec, mode: str, gap_us: int, flows: list[FlowSpec], seed: int,
            outcomes: list[FlowOutcome], loads: LinkLoads, rate_bps: float,
            scenario: str = "even", tags: bool = True) -> dict:
    ups = uplinks(spec, end_leaves(spec)[0])
    ratio, used = imbalance(loads, ups)
    ideal = ideal_s(flows, rate_bps)
    tputs = [o.throughput_bps for o in outcomes]
    jct = max(o.completion_s for o in outcomes)
    packets = sum(o.packets for o in outcomes)
    ooo = sum(o.out_of_order for o in outcomes)
    mean_tput = statistics.mean(tputs)
    return {"fabric": spec.name, "scenario": scenario, "mode": mode, "gap_us": gap_us,
            "tags": int(tags), "label": label(mode, gap_us, tags),
            "flows": len(flows), "seed": seed, "link_mbps": round(rate_bps / 1e6, 3),
            "uplinks": len(ups),
            "imbalance": round(ratio, 4),
            "expected_ecmp": round(expected_imbalance(len(flows), len(ups)), 4),
            "uplinks_used": used, "jct_s": round(jct, 4), "ideal_s": round(ideal, 4),
            "slowdown": round(jct / ideal, 4), "tput_mean_bps": round(mean_tput),
            "tput_min_bps": round(min(tputs)), "tput_max_bps": round(max(tputs)),
            "tput_cv": round(statistics.pstdev(tputs) / mean_tput, 4) if mean_tput else 0.0,
            "packets": packets, "out_of_order": ooo,
            "ooo_fraction": round(ooo / packets, 5) if packets else 0.0,
            "reorder_peak": max(o.reorder_occupancy_max for o in outcomes),
            "reorder_distance_max": max(o.reorder_distance_max for o in outcomes),
            "lost": sum(o.lost for o in outcomes),
            "complete": int(all(o.complete for o in outcomes)),
            "goodput_bps": round(sum(o.bytes for o in outcomes) * 8 / jct) if jct > 0 else 0,
            "retransmitted_packets": sum(o.retransmitted_packets for o in outcomes),
            "retransmitted_bytes": sum(o.retransmitted_bytes for o in outcomes),
            "naks": sum(o.naks for o in outcomes),
            "timeouts": sum(o.timeouts for o in outcomes),
            # the uplink the asymmetric scenarios slow down: its share of the uplink bytes
            "first_uplink_share": round(loads.bytes.get(ups[0], 0)
                                        / max(1, sum(loads.bytes.get(u, 0) for u in ups)), 4)}


def run(ctx: RunContext) -> None:
    params = ctx.params
    names = [ctx.fabric] if ctx.fabric else list(params["fabrics"])
    target = ctx.target  # resolved by the framework: p4switch or bmv2
    check_scenarios(list(params["scenarios"]))
    sender = {"rto_s": params["rto_s"], "ack_every": params["ack_every"]}
    run_no = 0
    receiver = {"reorder_timeout_s": params["reorder_timeout_s"]}
    every_mode = modes(params)  # checked before anything is written
    runs: list[dict] = []  # for the summary
    with ctx.out.append_csv("runs.csv", RUN_FIELDS) as run_table, \
            ctx.out.append_csv("flows.csv", FLOW_FIELDS) as flow_table, \
            ctx.out.append_csv("links.csv", LINK_FIELDS) as link_table:
        for name in names:
            spec = fabric(name, params)
            mbps = link_mbps(spec, params)
            rate_bps = mbps * 1e6
            ctx.progress(f"lb-compare: {name}: links at {mbps:g} Mb/s")
            first_mode, first_gap, first_tags = every_mode[0]
            leaf = end_leaves(spec)[0]
            ups = uplinks(spec, leaf)
            with LbLab(spec, mode=first_mode, flowlet_gap_us=first_gap or None, target=target,
                       switch_tags=first_tags, log_dir=ctx.out.path / "logs" / name,
                       cluster=ctx.cluster) as lab:
                rates = UplinkRates(functools.partial(lab.runtime_cli, leaf),
                                    [spec.port_to(leaf, up) for _, up in ups],
                                    link_mbps=mbps, slow_factor=params["slow_factor"],
                                    depth=params["uplink_depth"],
                                    degrade_after=params["degrade_after"])
                for mode, gap, tags in every_mode:
                    if (mode, gap, tags) != (lab.mode, lab.flowlet_gap_us or 0, lab.switch_tags):
                        lab.switch_mode(mode, gap or None, tags)  # a fresh pipeline: registers at 0
                        rates.forget()
                    taken: set[int] | None = set() if mode in PER_PACKET else None
                    for scenario, n in runs_of(params, mode, gap, tags):
                        for seed in range(params["seeds"]):
                            run_no += 1
                            flows = plan(spec, n, seed, params["flow_bytes"], taken,
                                         qpn_base=256 * run_no)
                            before = lab.link_counters()
                            lab.queue_peaks(ups)  # zeroes them
                            drops_before = lab.kernel_drops()
                            with rates.scenario(scenario, ideal_s(flows, rate_bps)):
                                outcomes = lab.run_flows(flows, rate_bps=rate_bps,
                                                         timeout_s=params["timeout_s"],
                                                         sender=sender, receiver=receiver)
                            if scenario != "even":  # resends still queued behind the slow port
                                lab.wait_idle(ups)
                            loads = lab.link_counters() - before
                            row = run_row(spec, mode, gap, flows, seed, outcomes, loads, rate_bps,
                                          scenario, tags)
                            row["uplink_queue_peak"] = max(lab.queue_peaks(ups).values())
                            drops = lab.kernel_drops_since(drops_before)
                            row["ring_drops"] = "" if drops is None else drops
                            runs.append(row)
                            run_table.append(row)
                            flow_table.extend(_flow_rows(row, outcomes))
                            link_table.extend({"fabric": name, "scenario": scenario,
                                               "label": row["label"], "flows": n,
                                               "seed": seed, "link": f"{a}>{b}", "packets": p,
                                               "bytes": loads.bytes[(a, b)]}
                                              for (a, b), p in sorted(loads.packets.items()) if p)
                            ctx.progress(f"lb-compare: {name} {scenario:>11} {row['label']:>14} "
                                         f"N={n:<3} seed {seed}: imbalance {row['imbalance']:.2f} "
                                         f"(ECMP theory {row['expected_ecmp']:.2f}), JCT "
                                         f"{row['jct_s']:.2f} s, out of order "
                                         f"{row['ooo_fraction']:.1%}, resent "
                                         f"{row['retransmitted_packets']}, uplink queue peak "
                                         f"{row['uplink_queue_peak']}"
                                         + (f", {row['ring_drops']} dropped at the switches' "
                                            f"receive rings" if row["ring_drops"] else ""))
    for line in summary(runs):
        ctx.progress(line)


def _flow_rows(row: dict, outcomes: list[FlowOutcome]) -> list[dict]:
    return [{"fabric": row["fabric"], "scenario": row["scenario"], "label": row["label"],
             "flows": row["flows"],
             "seed": row["seed"], "flow": o.flow.name, "sport": o.flow.sport,
             "bytes": o.bytes, "completion_s": round(o.completion_s, 4),
             "throughput_bps": round(o.throughput_bps), "packets": o.packets,
             "out_of_order": o.out_of_order, "reorder_occupancy_max": o.reorder_occupancy_max,
             "reorder_distance_max": o.reorder_distance_max,
             "reorder_skipped": o.record.get("reorder_skipped", 0), "tagged": o.tagged,
             "lost": o.lost, "retransmitted_packets": o.retransmitted_packets, "naks": o.naks,
             "timeouts": o.timeouts} for o in outcomes]


def summary(runs: list[dict]) -> list[str]:
    """Per fabric, scenario and mode: mean imbalance (ECMP theory), mean slowdown, out-of-order
    share, packets resent."""
    lines = []
    for fab, scen in dict.fromkeys((r["fabric"], r.get("scenario", "even")) for r in runs):
        mine = [r for r in runs if r["fabric"] == fab and r.get("scenario", "even") == scen]
        for lab in dict.fromkeys(r["label"] for r in mine):
            rows = [r for r in mine if r["label"] == lab]
            lines.append(
                f"lb-compare: {fab} {scen:>11} {lab:>14}: imbalance "
                f"{statistics.mean(float(r['imbalance']) for r in rows):.2f} (ECMP theory "
                f"{statistics.mean(float(r['expected_ecmp']) for r in rows):.2f}), slowdown "
                f"{statistics.mean(float(r['slowdown']) for r in rows):.2f}, out of order "
                f"{statistics.mean(float(r['ooo_fraction']) for r in rows):.1%}, reorder peak "
                f"{max(int(r['reorder_peak']) for r in rows)}, resent "
                f"{sum(int(r.get('retransmitted_packets', 0)) for r in rows)} packets")
    return lines


EXPERIMENT = Experiment(
    name="lb-compare",
    summary="ECMP vs flowlet switching vs round-robin and queue-aware DLB, with and without "
            "reorder tags, on even and asymmetric uplinks: link imbalance against "
            "balls-into-bins, per-flow throughput, job completion time, reordering, "
            "go-back-N retransmissions",
    duration="about 45 s with --quick, 3 min in full; Mininet, root",
    defaults={"fabrics": ["leafspine", "bigraph", "hpn7"],
              "modes": ["ecmp", "flowlet", "dlb", "qdlb", "dlb-untagged"],
              "flowlet_gaps_us": [500, 50000], "flows": [2, 4, 8], "seeds": 3,
              "scenarios": ["even", "slow-uplink", "degrade"],
              "scenario_modes": ["ecmp", "dlb", "qdlb"], "scenario_flows": [8],
              "slow_factor": 0.25, "degrade_after": 0.3,
              "flow_bytes": 262144, "link_mbps": 0.0, "flow_mbps": 20.0, "queue_pkts": 256,
              "uplink_depth": 1024,
              "timeout_s": 30.0,
              "rto_s": 1.0, "ack_every": 4, "reorder_timeout_s": 1.0,
              "name_prefix": "", "port_base": 22000},
    quick={"fabrics": ["leafspine"], "flows": [4, 8], "seeds": 2},
    # BMv2 carries a tenth of these rates without loss (docs/rates.md, "On BMv2"): 2 Mb/s per
    # flow and the former 32-packet flows; the timers outlast a full 128-packet uplink queue at
    # a quarter of 4 Mb/s (1.17 s), and the narrow gap is under a packet interval (4.4 ms)
    per_target={"bmv2": {"flow_mbps": 2.0, "flow_bytes": 32768, "uplink_depth": 128,
                         "rto_s": 1.5, "reorder_timeout_s": 1.5,
                         "flowlet_gaps_us": [3000, 50000]}},
    run=run,
    plot=plot,
    fabrics=tuple(SCALES),
    needs_root=True,
    tags=("mininet",),
)
