"""`fabric-lab train JOB`: a training job's iterations on an emulated fabric."""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric_lab.arguments import new_dir_problem, number
from fabric_lab.commands.controller import load_fabric
from fabric_lab.web_options import add_web_args, check_web_port
from topos.errors import InputError
from topos.values import ITERATIONS, MODEL_GBPS, NVLINK_RATIO, TIME_SCALE, Number

JITTER = Number(0.0, 0.5)
BUCKETS = Number(1, 1024, integer=True)
SLOW_FACTOR = Number(1.0, 100.0)

if TYPE_CHECKING:
    from jobs.train_record import TrainRecord


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train", help="run a training job (YAML/JSON) on a fabric: iteration time, exposed "
                      "communication, busbw, the slowest rank and the link it waited on",
        description="Run the iterations of a job file (jobs/examples/) on a fabric: compute is "
                    "modelled time, communication real collectives over the fabric. Times and "
                    "bandwidths are the modelled job's (docs/jobs/train.md).")
    parser.add_argument("job", type=Path, metavar="JOB", help="job file (.yaml, .yml or .json)")
    parser.add_argument("--fabric", default="hpn7", help="fabric name or JSON file (default hpn7)")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="fabric scale parameters, e.g. segments=2 nics_per_server=2")
    parser.add_argument("--target", default="auto", choices=("auto", "p4switch", "bmv2"),
                        help="P4 target (default: auto = p4switch)")
    parser.add_argument("--iterations", type=number(ITERATIONS), metavar="N",
                        help="override the job's")
    parser.add_argument("--algo", default="auto", choices=("auto", "ring", "hd", "hierarchical"),
                        help="all_reduce algorithm (auto: hierarchical when a group has "
                             "several GPUs of one server, else ring)")
    parser.add_argument("--alltoall", default="auto", choices=("auto", "flat", "pxn"),
                        help="alltoall algorithm (auto: pxn on multi-GPU servers)")
    parser.add_argument("--order", default="naive", choices=("naive", "topology", "remap"),
                        help="rank order (remap: EFLOPS, BiGraph only)")
    parser.add_argument("--time-scale", type=number(TIME_SCALE), default=1.0, metavar="X",
                        help="emulated seconds per modelled second (default 1: the emulated "
                             "iteration lasts as long as the real one; smaller moves fewer bytes)")
    parser.add_argument("--model-gbps", type=number(MODEL_GBPS), default=400.0, metavar="G",
                        help="the NIC rate the emulated links stand for (default 400)")
    parser.add_argument("--nvlink-ratio", type=number(NVLINK_RATIO), default=None, metavar="R",
                        help="NVLink rate per GPU over the NIC rate (default: jobs.gpus)")
    parser.add_argument("--format", "-F", default="text", choices=("text", "csv", "json"),
                        help="stdout: a readable report, per-collective CSV rows, or JSON")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="also write iterations.csv, collectives.csv (a row appended as "
                             "each iteration ends), ranks.csv, summary.json and params.json "
                             "into DIR (new or empty; checked before the fabric comes up)")
    parser.add_argument("--slow-gpu", action="append", default=[], metavar="RANK=FACTOR",
                        help="a SimAI workload: that rank's compute takes FACTOR times as long "
                             "(a slow card; repeatable)")
    parser.add_argument("--jitter", type=number(JITTER), default=0.0, metavar="X",
                        help="a SimAI workload: each compute stretch x (1 + N(0, X))")
    parser.add_argument("--buckets", type=number(BUCKETS), default=4, metavar="N",
                        help="a SimAI workload: data-parallel gradient buckets (default 4)")
    parser.add_argument("--log-dir", type=Path, metavar="DIR", help="switch logs into DIR")
    add_web_args(parser, "serve the web view with the job's panel: iteration, the collective in "
                         "flight, per-rank progress (--web-port, --web-host)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jobs.gpus import NVLINK_RATIO
    from jobs.train import TrainOptions
    from jobs.train_fabric import JobFabric
    from jobs.train_record import TrainRecord
    from jobs.workload import WorkloadError, load
    from targets import get_target

    def fail(message: str) -> int:
        print(f"fabric-lab train: {message}", file=sys.stderr)
        return 2

    problems: list[str] = []  # the job, --out and the fabric, all reported at once
    if _is_simai(args.job):
        return run_layered(args)
    for option, used in (("--slow-gpu", args.slow_gpu), ("--jitter", args.jitter),
                         ("--buckets", args.buckets != 4)):
        if used:
            problems.append(f"{option} is for a SimAI workload (a .txt job); a YAML/JSON job "
                            f"has its own `buckets` and no per-rank compute")
    try:
        job = load(args.job)
    except WorkloadError as err:
        problems.append(str(err))
    if args.out is not None:
        problems += filter(None, [new_dir_problem(args.out, "--out")])
    try:
        spec = load_fabric(args.fabric, args.scale)
    except InputError as err:
        problems.append(str(err))
    if problems:
        return fail("\n".join(problems))
    check_web_port(args)
    try:
        target = get_target(args.target).ensure_available().name
        fabric = JobFabric(spec, target=target, model_gbps=args.model_gbps,
                           nvlink_ratio=args.nvlink_ratio or NVLINK_RATIO, log_dir=args.log_dir)
        fabric.ranks(job, args.order)  # the job fits (before anything starts)
    except ValueError as err:
        return fail(str(err))
    options = TrainOptions(all_reduce=args.algo, alltoall=args.alltoall,
                           time_scale=args.time_scale, iterations=args.iterations)
    # --out claimed (created, locked, empty, writable) before the fabric comes up
    record = TrainRecord(args.out, {"job": job.name, "job_file": str(args.job),
                                    "fabric": spec.name, "target": target,
                                    **vars(options)})
    quiet = args.format != "text"
    say = (lambda text: print(text, file=sys.stderr)) if quiet else print
    say(f"fabric-lab train {job.name}: {job.ranks} ranks on {spec.name} ({target}); "
        f"{fabric.rate.describe()}")
    status, interrupted = "failed", False
    try:
        with fabric, contextlib.ExitStack() as web:
            view = None
            if args.web:
                from fabric_lab.web import JobView, train_view

                view = JobView()
                # a taken port: WebViewError, a MachineError (status 3)
                web.enter_context(train_view(spec, fabric.session.connected(), view,
                                             target=target, port=args.web_port,
                                             host=args.web_host,
                                             out=sys.stderr if quiet else sys.stdout))
            fabric.train(job, order=args.order, options=options, progress=say,
                         on_event=view, on_iteration=record.iteration)
        status = "complete"
    except KeyboardInterrupt:
        status, interrupted = "interrupted", True
    finally:
        summary = record.finish(status)  # the report below even when this could not write
    return show(summary, record, args, interrupted)


def _is_simai(path: Path) -> bool:
    """A SimAI workload: a .txt file, or a file whose first word is a SimAI policy."""
    from jobs.simai import is_simai

    if path.suffix == ".txt":
        return True
    try:
        with path.open("rb") as handle:
            return is_simai(handle.read(256).decode("utf-8", "replace"))
    except OSError:
        return False


def run_layered(args: argparse.Namespace) -> int:
    """`fabric-lab train WORKLOAD.txt`: a SimAI workload layer by layer (jobs.train_layers)."""
    from experiments.framework.results import claim
    from jobs.gpus import NVLINK_RATIO
    from jobs.layers_report import report, write_files
    from jobs.simai import SimaiError, read
    from jobs.train_fabric import JobFabric
    from jobs.train_layers import LayerOptions
    from targets import get_target

    problems: list[str] = []
    workload = spec = None
    try:
        workload = read(args.job)
    except SimaiError as err:
        problems.append(str(err))
    slow: dict[int, float] = {}
    for item in args.slow_gpu:
        rank, _, factor = item.partition("=")
        try:
            if not rank.isdigit():
                raise ValueError(f"the rank must be a whole number >= 0, not {rank!r}")
            slow[int(rank)] = float(SLOW_FACTOR.parse(factor))
        except ValueError as err:
            problems.append(f"--slow-gpu {item!r} (RANK=FACTOR): {err}")
    if args.out is not None:
        problems += filter(None, [new_dir_problem(args.out, "--out")])
    for option, value in (("--order", args.order != "naive"), ("--algo", args.algo == "hd"),
                          ("--web", args.web)):
        if value:
            problems.append(f"{option} is not supported for a SimAI workload (yet)")
    try:
        spec = load_fabric(args.fabric, args.scale)
    except InputError as err:
        problems.append(str(err))
    if workload is not None and spec is not None:  # the job's ranks on this fabric
        from jobs.gpus import cluster_from_fabric

        try:
            fitted, _ = workload.fit(len(cluster_from_fabric(spec).gpus()))
        except SimaiError as err:
            problems.append(str(err))
        else:
            problems += [f"--slow-gpu {r}: the job has ranks 0-{fitted.all_gpus - 1} on "
                         f"{spec.name}" for r in sorted(slow) if r >= fitted.all_gpus]
    if problems or workload is None or spec is None:
        print("fabric-lab train: " + "\n".join(problems), file=sys.stderr)
        return 2
    target = get_target(args.target).ensure_available().name
    options = LayerOptions(iterations=args.iterations or 2, time_scale=args.time_scale,
                           buckets=args.buckets, slow=slow, jitter=args.jitter,
                           all_reduce="ring" if args.algo == "auto" else args.algo,
                           alltoall="flat" if args.alltoall == "auto" else args.alltoall)
    out = claim(args.out) if args.out is not None else None
    say = print if args.format == "text" else (lambda text: print(text, file=sys.stderr))
    fabric = JobFabric(spec, target=target, model_gbps=args.model_gbps,
                       nvlink_ratio=args.nvlink_ratio or NVLINK_RATIO, log_dir=args.log_dir,
                       check=False)
    if out is not None:
        out.write_params("train", {"job_file": str(args.job), "fabric": spec.name,
                                   "target": target, **vars(options)})
    say(f"fabric-lab train {args.job.name}: SimAI workload on {spec.name} ({target}); "
        f"{fabric.rate.describe()}")
    status = "failed"
    try:
        with fabric:
            result = fabric.train_layers(workload, options, progress=say)
        status = "complete" if result.complete else "failed"
    except KeyboardInterrupt:
        if out is not None:
            out.update_params(status="interrupted")
        print("fabric-lab train: interrupted", file=sys.stderr)
        return 130
    if out is not None:
        files = write_files(result, out)
        out.update_params(status=status, files=files, notes=result.notes)
        out.close()
    if args.format == "json":
        from jobs.layers_report import group_rows, iteration_rows

        print(json.dumps({"iterations": iteration_rows(result), "groups": group_rows(result),
                          "notes": result.notes}, indent=2))
    elif args.format == "csv":
        from jobs.layers_report import GROUP_FIELDS, group_rows

        print(to_csv(group_rows(result), GROUP_FIELDS), end="")
    else:
        print(report(result, args.job.name))
    return 0 if status == "complete" else 1


def show(summary: dict[str, Any] | None, record: TrainRecord, args: argparse.Namespace,
         interrupted: bool) -> int:
    """Print what was measured (in --format) and say how the run ended: 0 complete, 1 a file
    could not be written (the report is printed all the same), 130 interrupted."""
    from jobs.train import COLLECTIVE_FIELDS, collective_rows

    if summary is not None and record.result is not None:
        if args.format == "json":
            print(json.dumps(summary, indent=2))
        elif args.format == "csv":
            print(to_csv(collective_rows(record.result), COLLECTIVE_FIELDS), end="")
        else:
            print(report(summary))
    if record.failure:
        print(f"fabric-lab train: could not write {record.failure}; the report above is "
              "what was measured", file=sys.stderr)
    if interrupted:
        kept = f"; kept in {args.out}" if args.out is not None and not record.failure else ""
        print(f"fabric-lab train: interrupted after {record.iterations} iteration(s){kept}",
              file=sys.stderr)
        return 130
    return 1 if record.failure else 0


def to_csv(rows: list[dict[str, Any]], fields: list[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields)
    writer.writeheader()
    writer.writerows({k: r.get(k, "") for k in fields} for r in rows)
    return out.getvalue()


def report(record: dict[str, Any]) -> str:
    """The readable report: per iteration, per collective, per rank, and the verdict."""
    s = record["scale"]
    lines = [f"# job {record['job']}: {record['ranks']} ranks; emulated "
             f"NICs of {s['emulated_bps'] / 1e6:g} Mb/s stand for {s['modelled_bps'] / 1e9:g} Gb/s, "
             f"time scale {s['time_scale']:g} (1 emulated byte = {s['bytes_factor']:.0f} "
             f"modelled bytes); times in the modelled job's seconds",
             "", f"{'iter':>4} {'iteration s':>12} {'compute s':>10} {'exposed s':>10} "
                 f"{'comm s':>8} {'slowest':>10}"]
    for it in record["iterations"]:
        lines.append(f"{it['iteration']:>4} {it['iteration_s']:>12.4f} {it['compute_s']:>10.4f} "
                     f"{it['exposed_s']:>10.4f} {it['communication_s']:>8.4f} "
                     f"{it['slowest_nic']:>10}")
    lines += ["", f"{'iter':>4} {'collective':<12} {'kind':<10} {'algorithm':<13} "
                  f"{'bytes':>12} {'time ms':>9} {'busbw GB/s':>10} {'ok':>3} {'#wrong':>6}"]
    for c in record["collectives"]:
        lines.append(f"{c['iteration']:>4} {c['purpose']:<12} {c['kind']:<10} "
                     f"{c['algorithm']:<13} {c['bytes']:>12} {c['time_s'] * 1e3:>9.2f} "
                     f"{c['busbw_gbs']:>10.2f} {'yes' if c['complete'] else 'NO':>3} "
                     f"{c['wrong']:>6}")
    lines += ["", "per rank, its own iteration: its own finishing time in every step",
              f"{'rank':>4} {'nic':>10} {'own iter s':>12} {'behind s':>9}"]
    for r in record["ranks_detail"]:
        lines.append(f"{r['rank']:>4} {r['nic']:>10} {r['own_iteration_s']:>12.4f} "
                     f"{r['behind_fastest_s']:>9.4f}")
    lines += ["", f"mean iteration {record['iteration_s']:.4f} s: compute "
                  f"{record['compute_s']:.4f} s + exposed communication "
                  f"{record['exposed_s']:.4f} s",
              f"slowest rank: {record['slowest_rank']} ({record['slowest_nic']}); "
              f"waited on: {record['why']}"]
    return "\n".join(lines)
