"""Experiment `lb-compare`: ECMP vs flowlet switching vs per-packet DLB on a real fabric.

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

Parameters `name_prefix` and `port_base` prefix every node and interface name and move the
switches' management ports, so a run can share the machine with another fabric.

Files: `runs.csv` (one row per mode, N, seed), `flows.csv` (one row per flow), `links.csv`
(bytes per directed switch link per run); plots `imbalance.png` (imbalance vs N per mode, the
balls-into-bins line for ECMP) and `completion_cdf.png` (CDF of the job slowdown per mode).
"""

from __future__ import annotations

import random
import statistics

from experiments.ballsbins import expected_imbalance
from experiments.framework import Experiment, ExperimentError, RunContext
from experiments.lb_lab import FlowOutcome, FlowSpec, LbLab, LinkLoads
from experiments.lb_plots import plot
from experiments.lb_switch import flow_index
from topos import FabricSpec, build_fabric
from topos.analysis import shortest_paths
from topos.relocate import prefixed

RUN_FIELDS = ["fabric", "mode", "gap_us", "label", "flows", "seed", "uplinks", "imbalance",
              "expected_ecmp", "uplinks_used", "jct_s", "ideal_s", "slowdown", "tput_mean_bps",
              "tput_min_bps", "tput_max_bps", "tput_cv", "packets", "out_of_order",
              "ooo_fraction", "reorder_peak", "reorder_distance_max", "lost", "complete"]
FLOW_FIELDS = ["fabric", "label", "flows", "seed", "flow", "sport", "bytes", "completion_s",
               "throughput_bps", "packets", "out_of_order", "reorder_occupancy_max",
               "reorder_distance_max", "reorder_skipped", "tagged", "lost"]
LINK_FIELDS = ["fabric", "label", "flows", "seed", "link", "packets", "bytes"]

# Scales that keep a fabric small enough for software switches (see docs/mechanisms/*.md).
SCALES = {
    "leafspine": {"leaves": 2, "spines": 4, "hosts_per_leaf": 4},
    "bigraph": {"switches_per_group": 4, "hosts_per_switch": 2},
    "fattree": {"k": 4},
    "aipod": {"rails": 2, "groups": 2, "servers_per_group": 2},
}


def label(mode: str, gap_us: int = 0) -> str:
    return f"flowlet {gap_us / 1000:g} ms" if mode == "flowlet" else mode


def modes(params: dict) -> list[tuple[str, int]]:
    out = []
    for mode in params["modes"]:
        if mode == "flowlet":
            out += [("flowlet", int(gap)) for gap in params["flowlet_gaps_us"]]
        elif mode in ("ecmp", "dlb"):
            out.append((mode, 0))
        else:
            raise ExperimentError(f"lb-compare: unknown mode {mode!r}; choose from ecmp, "
                                  f"flowlet, dlb")
    return out


def fabric(name: str, params: dict) -> FabricSpec:
    spec = build_fabric(name, **SCALES.get(name, {}), rate_mbps=params["link_mbps"],
                        queue_pkts=params["queue_pkts"])
    return isolated(spec, params)


def isolated(spec: FabricSpec, params: dict) -> FabricSpec:
    """With `name_prefix` set: node/interface names prefixed and gRPC/runtime CLI ports from
    `port_base` up, so the run does not meet another fabric on this machine."""
    if not params["name_prefix"]:
        return spec
    base = params["port_base"]
    return prefixed(spec, params["name_prefix"], base, base + 500)


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
    return leaves[0], [leaf for leaf in leaves[1:] if paths[leaf] == most][-1]


def nics_under(spec: FabricSpec, leaf: str) -> list[str]:
    return [n for n in spec.neighbours(leaf) if not spec.is_switch(n)]


def uplinks(spec: FabricSpec, leaf: str) -> list[tuple[str, str]]:
    return [(leaf, n) for n in spec.neighbours(leaf) if spec.is_switch(n)]


def plan(spec: FabricSpec, n: int, seed: int, flow_bytes: int,
         taken: set[int] | None = None) -> list[FlowSpec]:
    """n flows, source and destination NICs round-robin, random distinct source ports. With
    `taken`, ports whose per-flow register index is in it are skipped (and theirs added): a DLB
    switch numbers a flow's packets on from where an earlier flow with that index left off."""
    first, last = end_leaves(spec)
    srcs, dsts = nics_under(spec, first), nics_under(spec, last)
    ip = {nic.name: nic.ip for nic in spec.host_nics()}
    rng = random.Random(f"lb-compare-{spec.name}-{n}-{seed}")
    flows = []
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
        flows.append(FlowSpec(src, dst, qpn=1 + i, sport=sport, bytes=flow_bytes))
    return flows


def imbalance(loads: LinkLoads, links: list[tuple[str, str]]) -> tuple[float, int]:
    """(max / mean bytes over `links`, links that carried more than 1% of the mean)."""
    values = [loads.bytes.get(link, 0) for link in links]
    mean = sum(values) / len(values)
    if mean <= 0:
        raise RuntimeError("no traffic on the source leaf's uplinks: flows did not run")
    return max(values) / mean, sum(v > 0.01 * mean for v in values)


def run_row(spec: FabricSpec, mode: str, gap_us: int, flows: list[FlowSpec], seed: int,
            outcomes: list[FlowOutcome], loads: LinkLoads, rate_bps: float) -> dict:
    ups = uplinks(spec, end_leaves(spec)[0])
    ratio, used = imbalance(loads, ups)
    per_src = {f.src: sum(g.src == f.src for g in flows) for f in flows}
    ideal = max(f.bytes * 8 / (rate_bps / per_src[f.src]) for f in flows)
    tputs = [o.throughput_bps for o in outcomes]
    jct = max(o.completion_s for o in outcomes)
    packets = sum(o.packets for o in outcomes)
    ooo = sum(o.out_of_order for o in outcomes)
    mean_tput = statistics.mean(tputs)
    return {"fabric": spec.name, "mode": mode, "gap_us": gap_us, "label": label(mode, gap_us),
            "flows": len(flows), "seed": seed, "uplinks": len(ups),
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
            "complete": int(all(o.complete for o in outcomes))}


def run(ctx: RunContext) -> None:
    params = ctx.params
    names = [ctx.fabric] if ctx.fabric else list(params["fabrics"])
    target = "p4switch" if ctx.target == "auto" else ctx.target
    rate_bps = params["link_mbps"] * 1e6
    runs, flow_rows, link_rows = [], [], []
    for name in names:
        spec = fabric(name, params)
        first_mode, first_gap = modes(params)[0]
        with LbLab(spec, mode=first_mode, flowlet_gap_us=first_gap or None, target=target,
                   log_dir=ctx.out.path / "logs" / name) as lab:
            for mode, gap in modes(params):
                if (mode, gap) != (lab.mode, lab.flowlet_gap_us or 0):
                    lab.switch_mode(mode, gap or None)  # a fresh pipeline: registers at 0
                taken: set[int] | None = set() if mode == "dlb" else None
                for n in params["flows"]:
                    for seed in range(params["seeds"]):
                        flows = plan(spec, n, seed, params["flow_bytes"], taken)
                        before = lab.link_counters()
                        outcomes = lab.run_flows(flows, rate_bps=rate_bps,
                                                 timeout_s=params["timeout_s"])
                        loads = lab.link_counters() - before
                        row = run_row(spec, mode, gap, flows, seed, outcomes, loads, rate_bps)
                        runs.append(row)
                        flow_rows += _flow_rows(row, outcomes)
                        link_rows += [{"fabric": name, "label": row["label"], "flows": n,
                                       "seed": seed, "link": f"{a}>{b}", "packets": p,
                                       "bytes": loads.bytes[(a, b)]}
                                      for (a, b), p in sorted(loads.packets.items()) if p]
                        ctx.progress(f"lb-compare: {name} {row['label']:>14} N={n:<3} "
                                     f"seed {seed}: imbalance {row['imbalance']:.2f} "
                                     f"(ECMP theory {row['expected_ecmp']:.2f}), JCT "
                                     f"{row['jct_s']:.2f} s, out of order "
                                     f"{row['ooo_fraction']:.1%}")
    ctx.out.write_csv("runs.csv", runs, RUN_FIELDS)
    ctx.out.write_csv("flows.csv", flow_rows, FLOW_FIELDS)
    ctx.out.write_csv("links.csv", link_rows, LINK_FIELDS)
    for line in summary(runs):
        ctx.progress(line)


def _flow_rows(row: dict, outcomes: list[FlowOutcome]) -> list[dict]:
    return [{"fabric": row["fabric"], "label": row["label"], "flows": row["flows"],
             "seed": row["seed"], "flow": o.flow.name, "sport": o.flow.sport,
             "bytes": o.bytes, "completion_s": round(o.completion_s, 4),
             "throughput_bps": round(o.throughput_bps), "packets": o.packets,
             "out_of_order": o.out_of_order, "reorder_occupancy_max": o.reorder_occupancy_max,
             "reorder_distance_max": o.reorder_distance_max,
             "reorder_skipped": o.record.get("reorder_skipped", 0), "tagged": o.tagged,
             "lost": o.lost} for o in outcomes]


def summary(runs: list[dict]) -> list[str]:
    """Per fabric and mode: mean imbalance (ECMP theory), mean slowdown, out-of-order share."""
    lines = []
    for fab in dict.fromkeys(r["fabric"] for r in runs):
        for lab in dict.fromkeys(r["label"] for r in runs if r["fabric"] == fab):
            rows = [r for r in runs if r["fabric"] == fab and r["label"] == lab]
            lines.append(
                f"lb-compare: {fab} {lab:>14}: imbalance "
                f"{statistics.mean(float(r['imbalance']) for r in rows):.2f} (ECMP theory "
                f"{statistics.mean(float(r['expected_ecmp']) for r in rows):.2f}), slowdown "
                f"{statistics.mean(float(r['slowdown']) for r in rows):.2f}, out of order "
                f"{statistics.mean(float(r['ooo_fraction']) for r in rows):.1%}, reorder peak "
                f"{max(int(r['reorder_peak']) for r in rows)}")
    return lines


EXPERIMENT = Experiment(
    name="lb-compare",
    summary="ECMP vs flowlet switching vs per-packet DLB: link imbalance against balls-into-bins, "
            "per-flow throughput, job completion time, reordering",
    duration="about 1.5 min with --quick, 8 min in full; Mininet, root",
    defaults={"fabrics": ["leafspine", "bigraph"], "modes": ["ecmp", "flowlet", "dlb"],
              "flowlet_gaps_us": [1000, 50000], "flows": [2, 4, 8, 16], "seeds": 3,
              "flow_bytes": 32768, "link_mbps": 1.0, "queue_pkts": 256, "timeout_s": 30.0,
              "name_prefix": "", "port_base": 45000},
    quick={"fabrics": ["leafspine"], "flows": [2, 4, 8], "seeds": 2},
    run=run,
    plot=plot,
    fabrics=tuple(SCALES),
    needs_root=True,
    tags=("mininet",),
)
