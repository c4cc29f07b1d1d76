"""Experiment `straggler`: one slow link holds back every rank, and the lab finds it.

A data-parallel job (`job`, default `jobs/examples/llama13b-dp.yaml`) trains on single-homed
HPN 7.0 (Mininet, ECMP program) for `iterations`, healthy; then the switch port towards one NIC
(`victim`, a NIC name without the prefix; default the last server's last NIC) is served at
`slow_factor` of its link rate (`set_queue_rate` on the ToR's egress queue, both targets), and
the job trains again. Expected (Baidu's "one point slow, all slow", HPN's long tail): every
rank's iteration slows by about the same, the victim's own finishing times are the latest, and
`jobs.slowest` names the degraded link from the per-step per-rank timings and the fabric's
paths, with the port's packet counter as evidence.

The allreduce is halving-doubling (`algorithm`): each step a rank receives from another
partner, so the receiving link is the only one all its late flows share. A ring receives from
one fixed neighbour, whose uplink timing cannot tell from the receiver's downlink (the verdict
then lists both). Single-homed NICs keep every flow's ToR links certain (a dual-homed NIC's
flows may arrive through either plane). A 1% loss needs `sch_netem`, which not every kernel has;
the rate cut is what runs everywhere.

While the port is still slowed, `fabric-lab diagnose` (`controller.diagnose`) probes the fabric
with INT and reads its port counters: it must name the same link, as an egress serving below
its link rate.

Files: `iterations.csv` (per phase and iteration), `ranks.csv` (per phase and rank: own
iteration), `verdict.csv` (per phase: the link named, the link degraded, whether they match,
the port's packets; in the degraded phase also the link diagnose names first, its symptom and
whether it is the degraded port); plots `iterations.png`, `ranks.png`.
"""

from __future__ import annotations

from typing import Any

from controller.diagnose.run import diagnose
from experiments.framework import Experiment, ExperimentError, RunContext, isolated, scaled_fabric
from experiments.straggler.plots import plot
from jobs.train import TrainOptions, TrainResult, iteration_rows, rank_rows
from jobs.train_fabric import JobFabric
from jobs.workload import find, load
from topos import FabricSpec

ITERATION_FIELDS = ["phase", "iteration", "iteration_s", "compute_s", "exposed_s",
                    "communication_s", "slowest_nic", "slowest_rank_s", "fastest_rank_s"]
RANK_FIELDS = ["phase", "rank", "nic", "own_iteration_s", "behind_fastest_s"]
VERDICT_FIELDS = ["phase", "degraded_link", "named_link", "match", "named_packets", "tied",
                  "why", "diagnosed_link", "diagnosed_symptom", "diagnose_match"]
FRAME_BYTES = 1082  # a RoCEv2 WRITE frame of 1024 B payload on the wire
PHASES = ("healthy", "degraded")


def fabric(params: dict[str, Any]) -> FabricSpec:
    spec = scaled_fabric("hpn7", params, {"dual_tor": False}, rate_mbps=params["link_mbps"])
    return isolated(spec, params)


def degraded_link(spec: FabricSpec, params: dict[str, Any]) -> tuple[str, str, int]:
    """(switch, NIC, switch port) of the link whose switch egress is slowed."""
    nics = [n.name for n in spec.host_nics()]
    victim = params["name_prefix"] + params["victim"] if params["victim"] else nics[-1]
    if victim not in nics:
        raise ExperimentError(f"straggler: victim {params['victim']!r} is not a NIC of the "
                              f"fabric ({', '.join(n.removeprefix(params['name_prefix']) for n in nics)})")
    (link,) = [ln for ln in spec.links if victim in (ln.a.node, ln.b.node)]
    switch = link.other(victim).node
    return switch, victim, link.end(switch).port


def queue_pps(link_mbps: float, factor: float) -> int:
    return max(1, int(link_mbps * 1e6 * factor / (FRAME_BYTES * 8)))


def run(ctx: RunContext) -> None:
    params = ctx.params
    if not 0 < params["slow_factor"] < 1:
        raise ExperimentError(f"straggler: slow_factor must be in (0, 1), got "
                              f"{params['slow_factor']}")
    spec = fabric(params)
    job = load(find(params["job"]))
    switch, victim, port = degraded_link(spec, params)
    options = TrainOptions(all_reduce=params["algorithm"], time_scale=params["time_scale"],
                           iterations=params["iterations"])
    with JobFabric(spec, target=ctx.target, model_gbps=params["model_gbps"],
                   log_dir=ctx.out.path / "logs") as lab, \
            ctx.out.append_csv("iterations.csv", ITERATION_FIELDS) as iterations, \
            ctx.out.append_csv("ranks.csv", RANK_FIELDS) as ranks, \
            ctx.out.append_csv("verdict.csv", VERDICT_FIELDS) as verdicts:
        for phase in PHASES:
            if phase == "degraded":
                pps = queue_pps(params["link_mbps"], params["slow_factor"])
                lab.runtime_cli(switch, [f"set_queue_depth {params['queue_pkts']} {port}",
                                         f"set_queue_rate {pps} {port}"])
                ctx.progress(f"straggler: {switch} -> {victim} (port {port}) served at "
                             f"{pps} packets/s ({params['slow_factor']:g} of the link)")
            result = lab.train(job, options=options, progress=ctx.progress)
            iterations.extend({"phase": phase, **r} for r in iteration_rows(result))
            ranks.extend({"phase": phase, **r} for r in rank_rows(result))
            verdict = verdict_row(phase, result, (switch, victim))
            if phase == "degraded":  # the port still slowed: what INT and counters name
                verdict.update(diagnose_row(lab, (switch, victim, port)))
                ctx.progress(f"straggler: diagnose names {verdict['diagnosed_link'] or 'nothing'}"
                             f" ({verdict['diagnosed_symptom']})")
            verdicts.append(verdict)
            ctx.progress(f"straggler: {phase}: {verdict['why']}")


def verdict_row(phase: str, result: TrainResult, degraded: tuple[str, str]) -> dict[str, Any]:
    verdict = result.verdict
    named = verdict.link if verdict else None
    return {"phase": phase, "degraded_link": f"{degraded[0]}->{degraded[1]}" if phase ==
            "degraded" else "", "named_link": f"{named[0]}->{named[1]}" if named else "",
            "match": int(named == degraded) if phase == "degraded" else int(named is None),
            "named_packets": verdict.packets if verdict and verdict.packets is not None else "",
            "tied": ";".join(f"{a}->{b}" for a, b in verdict.tied) if verdict else "",
            "why": verdict.describe(lambda r: result.ranks[r].nic) if verdict else ""}


def diagnose_row(lab: JobFabric, degraded: tuple[str, str, int]) -> dict[str, Any]:
    """`fabric-lab diagnose` on the running fabric: the link it names first, and whether that
    is the degraded port's link, slow."""
    spec = lab.spec
    hosts = {nic.name: lab.session.host(nic.name) for nic in spec.host_nics()}
    named = diagnose(spec, hosts, lab.session.target).named
    if named is None:
        return {"diagnosed_link": "", "diagnosed_symptom": "", "diagnose_match": 0}
    switch, _victim, port = degraded
    return {"diagnosed_link": named.link, "diagnosed_symptom": named.symptom,
            "diagnose_match": int(named.symptom == "slow" and named.src == f"{switch}:{port}")}


EXPERIMENT = Experiment(
    name="straggler",
    summary="one slow link (a ToR port at a fraction of its rate) during training: every "
            "rank's iteration slows, and the lab names the link from per-rank timings and "
            "port counters",
    duration="about 1.5 min with --quick, 4 min in full; Mininet, root",
    defaults={"job": "llama13b-dp", "algorithm": "hd", "victim": "", "slow_factor": 0.1,
              "queue_pkts": 128, "link_mbps": 10.0, "model_gbps": 400.0, "iterations": 3,
              "time_scale": 1.0, "name_prefix": "", "port_base": 26000},
    quick={"iterations": 1, "time_scale": 0.5},
    run=run,
    plot=plot,
    fabrics=("hpn7",),
    needs_root=True,
    tags=("mininet", "jobs"),
)
