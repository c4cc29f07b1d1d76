"""Experiment `scaling`: scaling efficiency against per-GPU allreduce bandwidth (AIPod's curve).

Baidu relates the allreduce bus bandwidth each GPU gets to how well a data-parallel job scales:
5 GB/s per GPU gives about 70% scaling efficiency, 20 GB/s (a full 400G NIC) about 90%. Here a
data-parallel job (`job`, default `jobs/examples/llama13b-dp.yaml`) trains on HPN 7.0 (Mininet,
ECMP program, hierarchical allreduce) with its NIC links at each rate of `link_mbps`, the fabric
brought up anew for each. The scale stays one: every emulated Mb/s stands for `gbps_per_mbps`
modelled Gb/s (40: 10 Mb/s for 400 Gb/s), so the rates stand for modelled NICs of
`link_mbps` x `gbps_per_mbps` Gb/s, and the same job (same scaled bytes, same compute) meets
slower or faster links for real. Per rate: the data-parallel buckets' median busbw (GB/s per
GPU, modelled), the iteration time and the scaling efficiency = compute / iteration (data
parallelism with a fixed batch per GPU: one GPU alone would need the compute only).

Files: `points.csv` (one row per rate), `iterations.csv` (per rate and iteration); plot
`scaling.png` (efficiency against busbw, with AIPod's two reported points).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from experiments.framework import Experiment, ExperimentError, RunContext, isolated, scaled_fabric
from experiments.framework.figures import save_figure
from experiments.framework.results import ResultDir
from jobs import compare
from jobs.train import TrainOptions
from jobs.train_fabric import JobFabric
from jobs.workload import find, load

KEY = "model_gbps"
POINT_FIELDS = ["link_mbps", "model_gbps", "busbw_gbs", "iteration_s", "compute_s", "exposed_s",
                "efficiency"]
AIPOD = ((5.0, 0.70), (20.0, 0.90))  # (busbw GB/s per GPU, scaling efficiency), reported


def run(ctx: RunContext) -> None:
    params = ctx.params
    job = load(find(params["job"]))
    if any(rate <= 0 for rate in params["link_mbps"]):
        raise ExperimentError(f"scaling: link rates must be > 0 Mb/s, got {params['link_mbps']}")
    with ctx.out.append_csv("points.csv", POINT_FIELDS) as points, \
            ctx.out.append_csv("iterations.csv", compare.iteration_fields(KEY)) as iterations:
        for index, rate in enumerate(params["link_mbps"]):
            spec = isolated(scaled_fabric("hpn7", params, rate_mbps=rate),
                            {**params, "port_base": params["port_base"] + 100 * index})
            model_gbps = rate * params["gbps_per_mbps"]
            with JobFabric(spec, target=ctx.target, model_gbps=model_gbps,
                           log_dir=ctx.out.path / "logs" / f"{rate:g}") as lab:
                result = lab.train(job, options=TrainOptions(
                    all_reduce="hierarchical", time_scale=params["time_scale"],
                    iterations=params["iterations"]), progress=lambda _line: None)
            its = compare.iteration_table(KEY, f"{model_gbps:g}", result)
            buckets = [c.busbw_gbs for it in result.iterations for c in it.collectives
                       if c.purpose.startswith("dp")]
            iteration_s = statistics.median(float(r["iteration_s"]) for r in its)
            point = {"link_mbps": rate, "model_gbps": model_gbps,
                     "busbw_gbs": round(statistics.median(buckets), 3),
                     "iteration_s": round(iteration_s, 4), "compute_s": job.compute_s,
                     "exposed_s": round(iteration_s - job.compute_s, 4),
                     "efficiency": round(job.compute_s / iteration_s, 4)}
            iterations.extend(its)
            points.append(point)
            ctx.progress(f"scaling: {rate:g} Mb/s links ({model_gbps:g} Gb/s modelled): busbw "
                         f"{point['busbw_gbs']} GB/s per GPU, iteration {iteration_s:.3f} s, "
                         f"efficiency {point['efficiency']:.0%}")


def plot(result: ResultDir) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = result.read_csv("points.csv")  # a run that stopped: the rates it measured
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [float(p["busbw_gbs"]) for p in points]
    ys = [100 * float(p["efficiency"]) for p in points]
    ax.plot(xs, ys, "o-", label="lab: this job on HPN 7.0")
    for p, x, y in zip(points, xs, ys, strict=True):
        ax.annotate(f"{float(p['model_gbps']):g}G", (x, y), textcoords="offset points",
                    xytext=(4, -10), fontsize=8)
    ax.plot([a for a, _ in AIPOD], [100 * b for _, b in AIPOD], "s--", color="grey",
            label="AIPod, reported (175B-class model)")
    ax.set_xlabel("allreduce busbw per GPU (GB/s, modelled)")
    ax.set_ylabel("scaling efficiency (%) = compute / iteration")
    ax.set_ylim(0, 100)
    ax.set_xlim(left=0)
    ax.legend(fontsize=8)
    ax.set_title("scaling efficiency against per-GPU bus bandwidth", fontsize=10)
    path = save_figure(fig, result.path / "scaling.png")
    return [path]


EXPERIMENT = Experiment(
    name="scaling",
    summary="a data-parallel job's scaling efficiency against the allreduce bus bandwidth per "
            "GPU, link rate by link rate (AIPod's 5 GB/s -> 70%, 20 GB/s -> 90%)",
    duration="about 1.5 min with --quick, 5 min in full; Mininet, root",
    defaults={"job": "llama13b-dp", "link_mbps": [1.25, 2.5, 5.0, 10.0], "gbps_per_mbps": 40.0,
              "iterations": 2, "time_scale": 0.5, "name_prefix": "", "port_base": 28000},
    quick={"link_mbps": [5.0, 10.0], "iterations": 1, "time_scale": 0.25},
    run=run,
    plot=plot,
    fabrics=("hpn7",),
    needs_root=True,
    tags=("mininet", "jobs"),
)
