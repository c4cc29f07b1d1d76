"""`fabric-lab report`: one HTML page of every result's plots and parameters."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.framework.report import build_report, find_runs, unfinished_runs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="build one HTML page of all results",
                                   description="Build one HTML page with every plot under the "
                                               "results directory and the parameters behind it.")
    parser.add_argument("--results", type=Path, default=None,
                        help="results directory (default: ./results; without runs there yet, "
                             "the shipped examples, examples/results)")
    parser.add_argument("--out", type=Path, default=None,
                        help="page to write (default: RESULTS/report.html)")
    parser.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    out = args.out
    if args.results is None:
        args.results = Path("results")
        if not (args.results.is_dir() and find_runs(args.results)):
            from fabric_lab.figures import EXAMPLES

            print(f"fabric-lab report: no runs in {args.results}/ yet: the shipped examples "
                  f"({EXAMPLES}), from `make figures`")
            out = out or args.results / "report.html"
            args.results = EXAMPLES
    if not args.results.is_dir():
        print(f"fabric-lab report: {args.results} is not a directory", file=sys.stderr)
        return 2
    page, plots = build_report(args.results, out or args.results / "report.html")
    print(f"wrote {page} ({plots} plot(s))")
    for run, state in unfinished_runs(args.results):
        print(f"  {state}: {run} (did not complete: its CSV files may be missing or partial)")
    return 0
