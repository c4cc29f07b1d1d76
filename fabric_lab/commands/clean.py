"""`fabric-lab clean`: remove switch processes, host namespaces and interfaces left by a run
that was killed hard (SIGKILL, power loss), using the run-state files and the fabrics' plans."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "clean", help="remove what a killed run left behind (processes, namespaces, interfaces)",
        description="Stop the switch processes and host namespaces recorded in run-state files "
                    "(checked by pid and start time) and delete the fabrics' interfaces.")
    parser.add_argument("--run-dir", type=Path, default=None, metavar="DIR",
                        help="run-state directory (default: $FABRIC_LAB_RUN_DIR or "
                             "/run/fabric-lab)")
    parser.add_argument("--force", action="store_true",
                        help="also clean runs whose owning process is still alive")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="S",
                        help="seconds to wait after SIGTERM before SIGKILL (default 5)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("fabric-lab clean: needs root (namespaces and interfaces)", file=sys.stderr)
        return 2
    from topos.mininet.cleanup import clean

    report = clean(args.run_dir, force=args.force, timeout=args.timeout)
    for line in report.lines():
        print(line)
    return 0
