"""Experiment `topology-aware`: rank placement decides what a collective does to the network.

Two parts, each on its own fabric in Mininet (ECMP program), collectives run by the collective
runtime (`jobs.ccl`: one engine per NIC, go-back-N RoCE over the fabric, every NIC at its line
rate). Every NIC stands for a server of its own, so every flow crosses the fabric (no NVLink)
and a ring is the plain ring 0 -> 1 -> ... -> n-1 in placement order. Each step of a schedule
runs on its own (a one-step schedule), so the switches' counters are read per step:
- **AIPod ring allreduce**: ranks in the fabric's NIC order (`naive`: ring neighbours are the
  NICs of one server, on different rails, so every hop crosses the superspine) against the
  topology-aware order (rail by rail, group by group: only the two hops joining the rails cross
  it). Measured: bytes through the superspine (its switches' tx counters) against what the
  fabric model predicts, and completion time.
- **BiGraph halving-doubling allreduce**: ranks in host order (`naive`) against EFLOPS' rank
  remapping (`hdrm`). Per step, flows per switch-to-switch link from the fabric model's paths
  (links every shortest path of a flow uses) and from the measured per-link packet counters;
  a link conflict is a link carrying more than one flow. And completion time.

`name_prefix` / `port_base` isolate the fabrics as in `lb-compare`.

Files: `collectives.csv` (one row per part and order), `steps.csv` (one row per step), plots
`aipod_ring.png` and `bigraph_hd.png`. A step's `time_s` is its run's time (launch to the
ranks' last op, averaged over the ranks), `lost` its retransmitted packets, `out_of_order` the
packets that arrived ahead of their PSN; a collective's `total_s` is the sum of its steps'.
"""

from __future__ import annotations

import math

from experiments.framework import (
    Experiment,
    ExperimentError,
    RunContext,
    isolated,
    scaled_fabric,
)
from experiments.framework.lb_lab import LbLab, LinkLoads
from experiments.framework.results import CsvAppender
from experiments.topology_aware.paths import PathModel, conflicts, measured_link_flows
from experiments.topology_aware.plots import plot
from jobs.ccl.collectives import build
from jobs.ccl.communicator import Communicator, RunResult, Transport
from jobs.ccl.datatypes import REDOPS, datatype
from jobs.ccl.plan import Member, compile_collective
from jobs.ccl.schedule import Schedule, Step
from jobs.gpus import nic_gpus
from jobs.placement import hdrm_map, topology_aware_ring
from topos import FabricSpec

COLLECTIVE_FIELDS = ["part", "fabric", "algorithm", "order", "ranks", "size", "total_s",
                     "complete", "algbw_bps", "steps", "model_superspine_packets",
                     "superspine_packets", "superspine_bytes", "model_conflicts",
                     "measured_conflicts", "lost"]
STEP_FIELDS = ["part", "order", "step", "phase", "flows", "bytes", "time_s", "complete",
               "model_max_link_flows", "model_conflicts", "measured_max_link_flows",
               "measured_conflicts", "multipath_flows", "model_superspine_packets",
               "superspine_packets", "superspine_bytes", "out_of_order", "lost"]
PARTS = {"aipod": ("ring", ("naive", "aware")), "bigraph": ("hd", ("naive", "hdrm"))}
AIPOD_SCALE = {"rails": 2, "groups": 2, "servers_per_group": 2}
FLOAT = datatype("float")


def scale(fabric_name: str, params: dict) -> dict:
    if fabric_name == "aipod":
        return AIPOD_SCALE
    return {"switches_per_group": params["bigraph_switches_per_group"],
            "hosts_per_switch": params["bigraph_hosts_per_switch"]}


def placement(spec: FabricSpec, order: str) -> list[str]:
    """Rank -> NIC name."""
    nics = [nic.name for nic in spec.host_nics()]
    if order == "naive":
        return nics
    if order == "aware":
        # a fabric without rails (every rail None) is one rail
        rails = sorted({nic.rail for nic in spec.host_nics()}, key=lambda r: -1 if r is None else r)
        by_rail = [[nic.name for nic in spec.host_nics() if nic.rail == r] for r in rails]
        return topology_aware_ring(nics, by_rail)
    if order == "hdrm":
        switches = [sw for sw in spec.switches if sw.role in ("upper", "lower")]
        per_switch = len(nics) // len(switches)
        return [nics[i] for i in hdrm_map(per_switch, len(switches))]
    raise ExperimentError(f"topology-aware: unknown order {order!r}")


def switch_links(spec: FabricSpec) -> list[tuple[str, str]]:
    return [(ln.a.node, ln.b.node) for ln in spec.links
            if spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)] + \
           [(ln.b.node, ln.a.node) for ln in spec.links
            if spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)]


def step_row(part: str, order: str, index: int, step: Step, res: RunResult,
             step_flows: list[tuple[str, str, int]], loads: LinkLoads, model: PathModel,
             links: list[tuple[str, str]], tops: set[str], mtu: int) -> dict:
    pairs = [(s, d) for s, d, _ in step_flows if s != d]
    per_flow = max((math.ceil(b / mtu) for s, d, b in step_flows if s != d), default=1)
    model_loads = model.link_flows(pairs)
    measured = measured_link_flows(loads.packets, per_flow, links)
    model_c, model_max = conflicts(model_loads)
    meas_c, meas_max = conflicts(measured)
    crossing = [(s, d) for s, d in pairs if model.crosses(s, d, tops)] if tops else []
    return {"part": part, "order": order, "step": index, "phase": step.phase,
            "flows": len(pairs), "bytes": sum(f.bytes for f in step.flows),
            "time_s": round(res.time_s, 4), "complete": int(res.complete),
            "model_max_link_flows": model_max, "model_conflicts": model_c,
            "measured_max_link_flows": meas_max, "measured_conflicts": meas_c,
            "multipath_flows": sum(model.multipath(s, d) for s, d in pairs),
            "model_superspine_packets": len(crossing) * per_flow,
            "superspine_packets": sum(n for (a, _), n in loads.packets.items() if a in tops),
            "superspine_bytes": sum(n for (a, _), n in loads.bytes.items() if a in tops),
            "out_of_order": res.total("seq_errors"), "lost": res.total("retransmits")}


def run_step(comm: Communicator, members: list[Member], sched: Schedule, step: Step,
             algorithm: str) -> RunResult:
    """One step of `sched` on its own, as a one-step all-reduce schedule (float, sum)."""
    one = Schedule(sched.name, sched.ranks, sched.size, [step], sched.busbw_factor)
    compiled = compile_collective("all_reduce", algorithm, members, total_ranks=len(comm.gpus),
                                  count=sched.size // FLOAT.size, dtype=FLOAT,
                                  redop=REDOPS["sum"], schedule=one)
    loaded = comm.load(compiled)
    try:
        return comm.run(loaded)
    finally:
        comm.unload(loaded)


def run_part(ctx: RunContext, fabric_name: str, target: str, collectives: CsvAppender,
             steps: CsvAppender) -> None:
    """Both orders of one part: each step's row appended to `steps` as it is measured, each
    order's to `collectives` when its last step is."""
    params = ctx.params
    algorithm, orders = PARTS[fabric_name]
    spec = isolated(scaled_fabric(fabric_name, params, scale(fabric_name, params),
                                  rate_mbps=params["link_mbps"], queue_pkts=params["queue_pkts"]),
                    params)
    model = PathModel(spec)
    links = switch_links(spec)
    tops = {sw.name for sw in spec.switches if sw.role == "superspine"}
    mtu = params["mtu_payload"]
    link_bps = params["link_mbps"] * 1e6
    gpus = nic_gpus(spec)  # engine rank i on NIC i
    engine = {g.nic: i for i, g in enumerate(gpus)}
    with LbLab(spec, mode="ecmp", target=target, cluster=ctx.cluster,
               log_dir=ctx.out.path / "logs" / fabric_name) as lab, \
            Communicator([lab.host(g.nic) for g in gpus], gpus, spec,
                         nvlink_bps=link_bps,  # unused: no two NICs share a server
                         default_port_bps=link_bps,
                         transport=Transport(mtu=mtu).scaled(link_bps)) as comm:
        for order in orders:
            ranks = placement(spec, order)  # schedule rank -> NIC
            # a member's place in the list is its schedule rank, its `rank` its engine
            members = [Member(engine[nic], gpus[engine[nic]], comm.port_count(engine[nic]))
                       for nic in ranks]
            sched = build("all_reduce", algorithm, [m.gpu for m in members], params["size"])
            rows: list[dict] = []
            before = lab.link_counters()
            for index, step in enumerate(sched.steps):
                res = run_step(comm, members, sched, step, algorithm)
                after = lab.link_counters()
                flows = [(ranks[f.src], ranks[f.dst], f.bytes) for f in step.flows]
                rows.append(step_row(fabric_name, order, index, step, res, flows,
                                     after - before, model, links, tops, mtu))
                steps.append(rows[-1])
                before = after
            total = collective_row(fabric_name, spec.name, order, sched, rows)
            collectives.append(total)
            ctx.progress(f"topology-aware: {fabric_name} {sched.name} {order}: "
                         f"{total['total_s']:.2f} s, superspine packets "
                         f"{total['superspine_packets']} (model "
                         f"{total['model_superspine_packets']}), link conflicts "
                         f"per step {[r['measured_conflicts'] for r in rows]} (model "
                         f"{[r['model_conflicts'] for r in rows]})")


def collective_row(part: str, fabric_name: str, order: str, sched: Schedule,
                   rows: list[dict]) -> dict:
    total = sum(float(r["time_s"]) for r in rows)
    return {"part": part, "fabric": fabric_name, "algorithm": sched.name, "order": order,
            "ranks": sched.ranks, "size": sched.size, "total_s": round(total, 4),
            "complete": int(all(r["complete"] for r in rows)),
            "algbw_bps": round(sched.size * 8 / total) if total else 0, "steps": len(rows),
            **{key: sum(r[key] for r in rows)
               for key in ("model_superspine_packets", "superspine_packets", "superspine_bytes",
                           "model_conflicts", "measured_conflicts", "lost")}}


def run(ctx: RunContext) -> None:
    names = [ctx.fabric] if ctx.fabric else list(ctx.params["parts"])
    unknown = sorted(set(names) - set(PARTS))
    if unknown:
        raise ExperimentError(f"topology-aware: no part for {', '.join(unknown)}; "
                              f"parts: {', '.join(PARTS)}")
    target = ctx.target  # resolved by the framework: p4switch or bmv2
    with ctx.out.append_csv("collectives.csv", COLLECTIVE_FIELDS) as collectives, \
            ctx.out.append_csv("steps.csv", STEP_FIELDS) as steps:
        for name in names:
            run_part(ctx, name, target, collectives, steps)


EXPERIMENT = Experiment(
    name="topology-aware",
    summary="rank placement: AIPod ring with naive vs topology-aware order (superspine traffic), "
            "BiGraph halving-doubling with naive vs EFLOPS-remapped ranks (link conflicts)",
    duration="about 1 min with --quick, 5 min in full; Mininet, root",
    defaults={"parts": ["aipod", "bigraph"], "size": 131072, "link_mbps": 1.0,
              "queue_pkts": 256, "mtu_payload": 1024, "bigraph_switches_per_group": 4,
              "bigraph_hosts_per_switch": 2, "name_prefix": "", "port_base": 23000},
    quick={"size": 65536, "bigraph_switches_per_group": 2},
    run=run,
    plot=plot,
    fabrics=tuple(PARTS),
    needs_root=True,
    tags=("mininet",),
)
