"""Experiment `rank-mapping`: EFLOPS' rank remapping on BiGraph, as busbw and iteration time.

On BiGraph a flow between the two switch groups has exactly one path, so the communication
library picks the network path by picking which ranks talk. Halving-doubling with ranks in host
order (`naive`) puts several flows on one switch-to-switch link in some steps; EFLOPS' remapping
(`remap`, `jobs.placement.hdrm_map`) puts at most one on every link in every step.
`topology-aware` counts those conflicts; this experiment measures what they cost: per order,
`reps` timed halving-doubling allreduces of each size in `sizes` (after a warm-up), in the
modelled fabric's GB/s, and a data-parallel job (`job`, spread over every BiGraph host, one GPU
each) trained with the same allreduce. `max_link_flows` is the most flows on one
switch-to-switch link in any step, from the fabric model's certain paths (a flow inside a group
has N/2 equal-cost paths and counts on its NIC links only).

Files: `busbw.csv`, `iterations.csv`, `summary.csv` (per order); plots `busbw.png`,
`iteration.png`.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from experiments.framework import Experiment, RunContext, isolated, scaled_fabric
from experiments.framework.results import ResultDir
from jobs import compare
from jobs.ccl.collectives import build
from jobs.gpus import Gpu
from jobs.train import TrainOptions
from jobs.train_fabric import JobFabric, path_links
from jobs.workload import find, load
from topos import FabricSpec

KEY = "order"
ORDERS = ("naive", "remap")
MAXED = {"max_link_flows": max}  # summary.csv's extra column: the most over the repetitions


def fabric(params: dict[str, Any]) -> FabricSpec:
    spec = scaled_fabric("bigraph", params, {"switches_per_group": params["switches_per_group"],
                                             "hosts_per_switch": params["hosts_per_switch"]},
                         rate_mbps=params["link_mbps"])
    return isolated(spec, params)


def max_link_flows(spec: FabricSpec, ranks: list[Gpu], size: int) -> int:
    """Most flows on one switch-to-switch link in any step of halving-doubling on `ranks`."""
    links = path_links(spec)
    worst = 0
    for step in build("all_reduce", "hd", ranks, size).steps:
        load: Counter = Counter()
        for f in step.flows:
            load.update(ln for ln in links(ranks[f.src].nic, ranks[f.dst].nic)
                        if spec.is_switch(ln[0]) and spec.is_switch(ln[1]))
        worst = max(worst, max(load.values(), default=0))
    return worst


def run(ctx: RunContext) -> None:
    params = ctx.params
    spec = fabric(params)
    job = load(find(params["job"])).on_servers(len(spec.hosts), 1)
    options = TrainOptions(all_reduce="hd", time_scale=params["time_scale"],
                           iterations=params["iterations"])
    busbw: list[dict] = []
    iterations: list[dict] = []
    with JobFabric(spec, target=ctx.target, model_gbps=params["model_gbps"],
                   log_dir=ctx.out.path / "logs") as lab:
        for order in ORDERS:
            ranks = lab.ranks(job, order)
            for size in params["sizes"]:
                conflicts = max_link_flows(spec, ranks, size)
                results = lab.collective("all_reduce", "hd", ranks, size, params["reps"])
                busbw += [compare.busbw_row(KEY, order, "all_reduce", "hd", lab.rate, size, rep,
                                            res, max_link_flows=conflicts)
                          for rep, res in enumerate(results)]
                compare.write_tables(ctx.out, KEY, busbw, iterations, MAXED)
                median = statistics.median(r["busbw_gbs"] for r in busbw[-len(results):])
                ctx.progress(f"rank-mapping: {order} hd allreduce {size} B: busbw "
                             f"{median:.1f} GB/s, at most {conflicts} flows on a link")
            result = lab.train(job, order=order, options=options, progress=ctx.progress)
            iterations += compare.iteration_table(KEY, order, result)
            compare.write_tables(ctx.out, KEY, busbw, iterations, MAXED)


def plot(result: ResultDir) -> list[Path]:
    return compare.plot(result, KEY, "BiGraph halving-doubling",
                        ("max_link_flows", "most flows on one switch-to-switch link"))


EXPERIMENT = Experiment(
    name="rank-mapping",
    summary="BiGraph halving-doubling allreduce with naive vs EFLOPS-remapped ranks: busbw, "
            "link sharing and a data-parallel job's iteration time",
    duration="about 1.5 min with --quick, 5 min in full; Mininet, root",
    defaults={"job": "llama13b-dp", "switches_per_group": 4, "hosts_per_switch": 2,
              "link_mbps": 5.0, "model_gbps": 400.0, "sizes": [65536, 262144], "reps": 3,
              "iterations": 3, "time_scale": 0.5, "name_prefix": "", "port_base": 27000},
    quick={"switches_per_group": 2, "link_mbps": 10.0, "sizes": [65536], "reps": 1,
           "iterations": 1, "time_scale": 0.25},
    run=run,
    plot=plot,
    fabrics=("bigraph",),
    needs_root=True,
    tags=("mininet", "jobs"),
    scalable=False,
)
