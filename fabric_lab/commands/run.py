"""`fabric-lab run EXPERIMENT`: run an experiment into a fresh result directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import targets
from experiments.framework import ExperimentError, execute
from experiments.framework.registry import all_experiments
from fabric_lab.arguments import dir_problem, new_dir_problem
from fabric_lab.commands.up import add_cluster_args, cluster_options
from topos.builders import parse_scale
from topos.errors import FabricLabError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run an experiment (CSV, params.json and plots into results/)",
        description="Run an experiment. Results go to results/<experiment>/<timestamp>/ "
                    "(or --out DIR, which must be new or empty); nothing is ever overwritten. "
                    "Rows are kept as they are measured: an interrupted run (Ctrl-C) keeps "
                    "them, marked interrupted. Exit status: 0 done, 1 the run or its plots "
                    "failed, 2 wrong input, 3 another run holds --out (or this machine cannot "
                    "run it), 130 interrupted.")
    parser.add_argument("experiment", nargs="?", help="experiment name (see --list)")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")
    parser.add_argument("--fabric", help="fabric to run on, where the experiment takes one")
    parser.add_argument("--target", default="auto", choices=targets.CHOICES,
                        help="P4 target (default: auto = p4switch; bmv2 only when asked for)")
    parser.add_argument("--quick", action="store_true",
                        help="the short variant (seconds to a few minutes; see --list)")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale of the fabrics it builds, e.g. --scale segments=3 "
                             "(fabric-lab show FABRIC --help lists the parameters)")
    parser.add_argument("--out", type=Path, help="result directory (new or empty)")
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="base directory for results (default: ./results)")
    parser.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                        help="override a parameter (repeatable)")
    add_cluster_args(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    experiments = all_experiments()
    if args.list:
        width = max((len(name) for name in experiments), default=0)
        for name, experiment in sorted(experiments.items()):
            where = f" [{', '.join(experiment.fabrics)}]" if experiment.fabrics else ""
            print(f"{name:<{width}}  {experiment.summary} ({experiment.duration}){where}")
        return 0
    if not args.experiment:
        print("fabric-lab run: name an experiment, or use --list", file=sys.stderr)
        return 2
    if args.experiment not in experiments:
        print(f"fabric-lab run: unknown experiment {args.experiment!r}; "
              f"known: {', '.join(sorted(experiments))}", file=sys.stderr)
        return 2
    overrides = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"fabric-lab run: --param wants KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        overrides[key] = value
    problems = [p for p in (new_dir_problem(args.out, "--out") if args.out else None,
                            dir_problem(args.results, "--results")) if p]
    if problems:
        print(f"fabric-lab run: {'; '.join(problems)}", file=sys.stderr)
        return 2
    try:
        scale = parse_scale(args.scale)
        cluster = cluster_options(args)
    except (ValueError, RuntimeError) as error:
        print(f"fabric-lab run: {error}", file=sys.stderr)
        return 2
    try:
        execute(experiments[args.experiment], quick=args.quick, target=args.target,
                fabric=args.fabric, out=args.out, base=args.results, overrides=overrides,
                scale=scale, cluster=cluster)
    except ExperimentError as error:
        print(f"fabric-lab run: {error}", file=sys.stderr)
        return 2
    except FabricLabError as error:  # the result directory (2, or 3 in use), the plots (1)
        print(f"fabric-lab run: {error}", file=sys.stderr)
        return error.exit_status
    except OSError as error:  # a full disk or a file made unwritable while the run went on
        print(f"fabric-lab run: {error.filename or 'writing results'}: "
              f"{error.strerror or error}", file=sys.stderr)
        return 1
    return 0
