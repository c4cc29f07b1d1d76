"""`fabric-lab report`: one HTML page of every result's plots and parameters."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.framework.report import build_report, unfinished_runs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="build one HTML page of all results",
                                   description="Build one HTML page with every plot under the "
                                               "results directory and the parameters behind it.")
    parser.add_argument("--results", type=Path, default=Path("results"),
                        help="results directory (default: ./results)")
    parser.add_argument("--out", type=Path, default=None,
                        help="page to write (default: RESULTS/report.html)")
    parser.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    if not args.results.is_dir():
        print(f"fabric-lab report: {args.results} is not a directory", file=sys.stderr)
        return 2
    page, plots = build_report(args.results, args.out or args.results / "report.html")
    print(f"wrote {page} ({plots} plot(s))")
    for run, state in unfinished_runs(args.results):
        print(f"  {state}: {run} (did not complete: its CSV files may be missing or partial)")
    return 0
