"""Experiment `rail-vs-clos`: the same GPU servers on HPN 7.0 and on a general-purpose Clos.

HPN 7.0 puts NIC r of every server of a segment on the rail-r ToR; the Clos (`fabric.py`) puts a
server's NICs on one ToR. Both run the hierarchical allreduce (in-server reduce-scatter over
NVLink, a ring per rail across servers, in-server allgather) and a data-parallel training job
(`job`, default `jobs/examples/llama13b-dp.yaml`), in Mininet with the ECMP program:
- **busbw**: `reps` timed hierarchical allreduces of each size in `sizes` (after one warm-up),
  in the modelled fabric's GB/s (the NIC links stand for `model_gbps`);
- **tiers**: bytes the aggregation switches received per allreduce (the ToRs' tx counters
  towards them over the warm-up and the timed runs, per run): on HPN 7.0 a rail ring inside a
  segment never climbs; on the Clos every hop between servers does;
- **iterations**: the job's iteration time, compute and exposed communication.

Files: `busbw.csv` (one row per fabric, size and repetition), `iterations.csv` (per fabric and
iteration), `summary.csv` (per fabric: median busbw per size, median iteration, aggregation
bytes); plots `busbw.png`, `iteration.png`.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from experiments.framework import Experiment, ExperimentError, RunContext, isolated, scaled_fabric
from experiments.framework.results import ResultDir
from experiments.rail_vs_clos.fabric import shared_tor_clos
from jobs import compare
from jobs.train import TrainOptions
from jobs.train_fabric import JobFabric
from jobs.workload import find, load
from topos import FabricSpec

KEY = "fabric"
SUMMED = {"agg_bytes": sum}  # summary.csv's extra column: summed over the repetitions
FABRICS = ("hpn7", "clos")


def fabric(name: str, params: dict[str, Any], index: int) -> FabricSpec:
    shape = {"segments": params["segments"], "servers_per_segment": params["servers_per_segment"],
             "nics_per_server": params["gpus_per_server"]}
    if name == "hpn7":
        spec = scaled_fabric("hpn7", params, shape, rate_mbps=params["link_mbps"])
    else:
        spec = shared_tor_clos(**shape, rate_mbps=params["link_mbps"])
    return isolated(spec, {**params, "port_base": params["port_base"] + 100 * index})


def agg_bytes(spec: FabricSpec, tx: Any) -> int:
    """Bytes sent to an aggregation switch (by a ToR), from tx counter deltas."""
    aggs = {sw.name for sw in spec.switches if sw.role == "agg"}
    return sum(n for (src, dst), n in tx.items() if dst in aggs and src not in aggs)


def run_fabric(ctx: RunContext, name: str, index: int, busbw: list[dict],
               iterations: list[dict]) -> None:
    """Measure fabric `name`, adding its rows to `busbw` and `iterations`; the tables are
    rewritten after every size and after the training."""
    params = ctx.params
    spec = fabric(name, params, index)
    job = load(find(params["job"]))
    if job.servers * job.gpus_per_server != len(spec.host_nics()):
        raise ExperimentError(f"rail-vs-clos: job {job.name} has {job.ranks} ranks, the "
                              f"fabrics {len(spec.host_nics())} GPUs (set segments, "
                              f"servers_per_segment, gpus_per_server to match)")
    with JobFabric(spec, target=ctx.target, model_gbps=params["model_gbps"],
                   log_dir=ctx.out.path / "logs" / name) as lab:
        ranks = lab.ranks(job)
        for size in params["sizes"]:
            before = lab.tx_bytes()
            results = lab.collective("all_reduce", "hierarchical", ranks, size, params["reps"])
            per_run = agg_bytes(spec, lab.tx_bytes() - before) // (len(results) + 1)  # + warm-up
            busbw += [compare.busbw_row(KEY, name, "all_reduce", "hierarchical", lab.rate, size,
                                        rep, res, agg_bytes=per_run)
                      for rep, res in enumerate(results)]
            compare.write_tables(ctx.out, KEY, busbw, iterations, SUMMED)
            median = statistics.median(r["busbw_gbs"] for r in busbw[-len(results):])
            ctx.progress(f"rail-vs-clos: {name} allreduce {size} B: busbw {median:.1f} GB/s, "
                         f"{per_run} B into the aggregation layer per run")
        options = TrainOptions(all_reduce="hierarchical", time_scale=params["time_scale"],
                               iterations=params["iterations"])
        result = lab.train(job, options=options, progress=ctx.progress)
        iterations += compare.iteration_table(KEY, name, result)
        compare.write_tables(ctx.out, KEY, busbw, iterations, SUMMED)


def run(ctx: RunContext) -> None:
    names = [ctx.fabric] if ctx.fabric else list(FABRICS)
    busbw: list[dict] = []
    iterations: list[dict] = []
    for index, name in enumerate(names):
        run_fabric(ctx, name, index, busbw, iterations)


def plot(result: ResultDir) -> list[Path]:
    return compare.plot(result, KEY, "hierarchical allreduce",
                        ("agg_bytes", "bytes into the aggregation layer (sum of timed runs)"))


EXPERIMENT = Experiment(
    name="rail-vs-clos",
    summary="the same GPU servers on rail-optimised HPN 7.0 and on a Clos whose servers share a "
            "ToR: hierarchical allreduce busbw, bytes into the aggregation layer, iteration time",
    duration="about 2 min with --quick, 6 min in full; Mininet, root",
    defaults={"job": "llama13b-dp", "segments": 2, "servers_per_segment": 2,
              "gpus_per_server": 2, "link_mbps": 10.0, "model_gbps": 400.0,
              "sizes": [65536, 262144], "reps": 3, "iterations": 3, "time_scale": 0.5,
              "name_prefix": "", "port_base": 25000},
    quick={"sizes": [65536], "reps": 1, "iterations": 1, "time_scale": 0.25},
    run=run,
    plot=plot,
    fabrics=FABRICS,
    needs_root=True,
    tags=("mininet", "jobs"),
    scalable=False,
)
