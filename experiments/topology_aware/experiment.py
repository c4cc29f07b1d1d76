"""Experiment `topology-aware`: rank placement decides what a collective does to the network.

Two parts, each on its own fabric in Mininet (ECMP program), collectives run by
`traffic.collectives` (one RDMA WRITE message per flow and step, every NIC at its line rate):
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
`aipod_ring.png` and `bigraph_hd.png`.
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
from experiments.topology_aware.paths import PathModel, conflicts, measured_link_flows
from experiments.topology_aware.plots import plot
from topos import FabricSpec
from traffic.collectives.placement import hdrm_map, topology_aware_ring
from traffic.collectives.runner import CollectiveRunner, StepResult
from traffic.collectives.schedule import (
    Flow,
    Schedule,
    Step,
    halving_doubling_allreduce,
    ring_allreduce,
)

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


def schedule(algorithm: str, ranks: int, size: int) -> Schedule:
    return ring_allreduce(ranks, size) if algorithm == "ring" else \
        halving_doubling_allreduce(ranks, size)


def switch_links(spec: FabricSpec) -> list[tuple[str, str]]:
    return [(ln.a.node, ln.b.node) for ln in spec.links
            if spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)] + \
           [(ln.b.node, ln.a.node) for ln in spec.links
            if spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)]


def step_row(part: str, order: str, res: StepResult, step_flows: list[tuple[str, str, int]],
             loads: LinkLoads, model: PathModel, links: list[tuple[str, str]],
             tops: set[str], mtu: int) -> dict:
    pairs = [(s, d) for s, d, _ in step_flows if s != d]
    per_flow = max((math.ceil(b / mtu) for s, d, b in step_flows if s != d), default=1)
    model_loads = model.link_flows(pairs)
    measured = measured_link_flows(loads.packets, per_flow, links)
    model_c, model_max = conflicts(model_loads)
    meas_c, meas_max = conflicts(measured)
    crossing = [(s, d) for s, d in pairs if model.crosses(s, d, tops)] if tops else []
    return {"part": part, "order": order, "step": res.index, "phase": res.phase,
            "flows": len(pairs), "bytes": res.bytes, "time_s": round(res.time_s, 4),
            "complete": int(res.complete), "model_max_link_flows": model_max,
            "model_conflicts": model_c, "measured_max_link_flows": meas_max,
            "measured_conflicts": meas_c,
            "multipath_flows": sum(model.multipath(s, d) for s, d in pairs),
            "model_superspine_packets": len(crossing) * per_flow,
            "superspine_packets": sum(n for (a, _), n in loads.packets.items() if a in tops),
            "superspine_bytes": sum(n for (a, _), n in loads.bytes.items() if a in tops),
            "out_of_order": res.out_of_order, "lost": res.lost_packets}


def on_hosts(sched: Schedule, ranks: list[str], nics: list[str]) -> Schedule:
    """The schedule with every rank replaced by the index of its NIC in `nics`, so one runner
    (one set of workers on `nics`) runs any placement."""
    index = {nic: i for i, nic in enumerate(nics)}
    steps = [Step([Flow(index[ranks[f.src]], index[ranks[f.dst]], f.bytes) for f in step.flows],
                  step.phase) for step in sched.steps]
    return Schedule(sched.name, sched.ranks, sched.size, steps, sched.busbw_factor)


def run_part(ctx: RunContext, fabric_name: str, target: str) -> tuple[list[dict], list[dict]]:
    params = ctx.params
    algorithm, orders = PARTS[fabric_name]
    spec = isolated(scaled_fabric(fabric_name, params, scale(fabric_name, params),
                                  rate_mbps=params["link_mbps"], queue_pkts=params["queue_pkts"]),
                    params)
    model = PathModel(spec)
    links = switch_links(spec)
    tops = {sw.name for sw in spec.switches if sw.role == "superspine"}
    mtu = params["mtu_payload"]
    nics = [nic.name for nic in spec.host_nics()]
    collectives, steps = [], []
    with LbLab(spec, mode="ecmp", target=target, cluster=ctx.cluster,
               log_dir=ctx.out.path / "logs" / fabric_name) as lab, \
            CollectiveRunner([lab.host(nic) for nic in nics], params["link_mbps"] * 1e6,
                             mtu_payload=mtu, sender={"dcqcn": False}) as runner:
        for order in orders:
            ranks = placement(spec, order)
            sched = on_hosts(schedule(algorithm, len(ranks), params["size"]), ranks, nics)
            rows: list[dict] = []
            before = lab.link_counters()
            for index, step in enumerate(sched.steps):
                one = Schedule(sched.name, sched.ranks, sched.size, [step])
                res = runner.run(one).steps[0]
                res.index = index
                after = lab.link_counters()
                flows = [(nics[f.src], nics[f.dst], f.bytes) for f in step.flows]
                rows.append(step_row(fabric_name, order, res, flows, after - before, model,
                                     links, tops, mtu))
                before = after
            steps += rows
            collectives.append(collective_row(fabric_name, spec.name, order, sched, rows))
            ctx.progress(f"topology-aware: {fabric_name} {sched.name} {order}: "
                         f"{collectives[-1]['total_s']:.2f} s, superspine packets "
                         f"{collectives[-1]['superspine_packets']} (model "
                         f"{collectives[-1]['model_superspine_packets']}), link conflicts "
                         f"per step {[r['measured_conflicts'] for r in rows]} (model "
                         f"{[r['model_conflicts'] for r in rows]})")
    return collectives, steps


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
    collectives, steps = [], []
    for name in names:
        c, s = run_part(ctx, name, target)
        collectives += c
        steps += s
    ctx.out.write_csv("collectives.csv", collectives, COLLECTIVE_FIELDS)
    ctx.out.write_csv("steps.csv", steps, STEP_FIELDS)


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
