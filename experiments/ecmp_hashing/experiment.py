"""Experiment `ecmp-hashing`: how unevenly ECMP spreads few, fat RoCEv2 flows.

Every flow (one queue pair: its own UDP source port) is hashed by the real `ecmp.p4` selector in
the p4switch engine onto one of n equal-cost links; the busiest link's load over the mean is
compared with the balls-into-bins expectation. A second part shows hash polarisation: two switch
tiers with the same hash seed leave most upper-tier links idle; per-switch seeds restore spreading.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiments.framework import Experiment, RunContext
from experiments.framework.ballsbins import collision_probability, expected_imbalance
from experiments.framework.engine_switch import LbSwitch, roce_frame
from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir

FIELDS = ["links", "flows", "trial", "max_load", "mean_load", "imbalance", "links_used", "collided"]
POLARISATION_FIELDS = ["seeds", "trial", "flows", "tier2_links", "tier2_links_used"]


def _flow_frame(rng: random.Random) -> bytes:
    src = f"10.0.{rng.randrange(1, 255)}.{rng.randrange(1, 255)}"
    dst = f"10.1.{rng.randrange(1, 255)}.{rng.randrange(1, 255)}"
    return roce_frame(rng.randrange(49152, 65536), src_ip=src, dst_ip=dst,
                      dqpn=rng.randrange(1, 1 << 24))


def _loads(switch: LbSwitch, frames: list[bytes], links: list[int]) -> list[int]:
    loads = dict.fromkeys(links, 0)
    for frame in frames:
        loads[switch.egress_port(frame)] += 1
    return [loads[port] for port in links]


def run(ctx: RunContext) -> None:
    """Every trial's row appended to its CSV file as it is measured."""
    params = ctx.params
    with ctx.out.append_csv("imbalance.csv", FIELDS) as imbalance:
        for links in params["links"]:
            ports = list(range(1, links + 1))
            for flows in params["flows"]:
                for trial in range(params["trials"]):
                    imbalance.append(_imbalance(params, ports, flows, trial))
            ctx.progress(f"ecmp-hashing: {links} links done")
    with ctx.out.append_csv("polarisation.csv", POLARISATION_FIELDS) as polarisation:
        for row in _polarisation(params):
            polarisation.append(row)


def _imbalance(params: dict, ports: list[int], flows: int, trial: int) -> dict:
    """One trial: `flows` random flows hashed onto the links `ports`."""
    links = len(ports)
    rng = random.Random(f"{params['seed']}-{links}-{flows}-{trial}")
    switch = LbSwitch("ecmp", ports, seed=rng.randrange(1 << 16))
    loads = _loads(switch, [_flow_frame(rng) for _ in range(flows)], ports)
    mean = flows / links
    return {"links": links, "flows": flows, "trial": trial, "max_load": max(loads),
            "mean_load": mean, "imbalance": max(loads) / mean,
            "links_used": sum(1 for load in loads if load),
            "collided": int(any(load > 1 for load in loads))}


def _polarisation(params: dict) -> Iterator[dict]:
    """Tier 1 splits flows over k uplinks; tier-2 switch behind uplink 1 splits again over k."""
    k = params["polarisation_links"]
    ports = list(range(1, k + 1))
    for seeds in ("same", "per-switch"):
        for trial in range(params["trials"]):
            rng = random.Random(f"{params['seed']}-polar-{trial}")
            seed1 = rng.randrange(1 << 16)
            seed2 = seed1 if seeds == "same" else rng.randrange(1 << 16)
            tier1 = LbSwitch("ecmp", ports, seed=seed1)
            tier2 = LbSwitch("ecmp", ports, seed=seed2)
            frames = [_flow_frame(rng) for _ in range(params["polarisation_flows"])]
            through_first = [f for f in frames if tier1.egress_port(f) == ports[0]]
            used = {tier2.egress_port(f) for f in through_first}
            yield {"seeds": seeds, "trial": trial, "flows": len(through_first),
                   "tier2_links": k, "tier2_links_used": len(used)}


def plot(result: ResultDir) -> list[Path]:
    """The imbalance figure, and the polarisation figure when its part was measured (a run
    interrupted during the imbalance part has no polarisation.csv)."""
    rows = result.read_csv("imbalance.csv")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for links in sorted({int(r["links"]) for r in rows}):
        flows = sorted({int(r["flows"]) for r in rows if int(r["links"]) == links})
        samples = [[float(r["imbalance"]) for r in rows if int(r["links"]) == links and int(r["flows"]) == f]
                   for f in flows]
        means = [statistics.mean(s) for s in samples]
        errors = [statistics.stdev(s) / len(s) ** 0.5 if len(s) > 1 else 0.0 for s in samples]
        line = ax.errorbar(flows, means, yerr=errors, fmt="o-", capsize=3,
                           label=f"{links} links: ECMP in ecmp.p4 (mean ± s.e.)").lines[0]
        ax.plot(flows, [expected_imbalance(f, links) for f in flows], "--", color=line.get_color(),
                label=f"{links} links: balls into bins")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("RoCEv2 flows (queue pairs)")
    ax.set_ylabel("busiest link / mean link load")
    ax.set_title("ECMP imbalance: measured vs balls-into-bins expectation")
    ax.legend(fontsize=8)
    imbalance_png = save_figure(fig, result.path / "imbalance.png")
    if not (result.path / "polarisation.csv").exists():
        return [imbalance_png]

    polar = result.read_csv("polarisation.csv")
    fig, ax = plt.subplots(figsize=(5, 4))
    labels = ["same", "per-switch"]
    used = [statistics.mean(int(r["tier2_links_used"]) for r in polar if r["seeds"] == s) for s in labels]
    ax.bar(["same seed\non both tiers", "per-switch\nseeds"], used, color=["#d95f02", "#1b9e77"])
    ax.axhline(int(polar[0]["tier2_links"]), color="grey", ls="--", label="tier-2 links available")
    ax.set_ylabel("tier-2 links carrying traffic (mean)")
    ax.set_title("Hash polarisation")
    ax.legend(fontsize=8)
    polar_png = save_figure(fig, result.path / "polarisation.png")
    return [imbalance_png, polar_png]


EXPERIMENT = Experiment(
    name="ecmp-hashing",
    summary="ECMP flow collisions and hash polarisation, measured on ecmp.p4 against balls-into-bins",
    duration="about 5 s with --quick, 30 s in full; no Mininet",
    defaults={"links": [2, 4, 8], "flows": [2, 4, 8, 16, 32, 64], "trials": 40, "seed": 1,
              "polarisation_links": 4, "polarisation_flows": 64},
    quick={"links": [2, 4], "flows": [2, 4, 8, 16], "trials": 12, "polarisation_flows": 32},
    run=run,
    plot=plot,
    targets=("p4switch",),  # the selector hashed in p4switch's engine; BMv2's hash is the same
)

__all__ = ["EXPERIMENT", "collision_probability"]
