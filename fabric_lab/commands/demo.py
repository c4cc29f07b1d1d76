"""`fabric-lab demo`: the live failover demo (about 30-60 s).

Brings up the HPN 7.0 fabric on the embedded p4switch target, starts RoCEv2 flows and shows
each flow's throughput live, fails the busiest link of the chosen kind after a few seconds,
shows the dip, the controller's reroute and the measured loss window, restores the link, and
writes the timeline plot (its path is printed at the end). Needs root (Mininet).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

KINDS = ("uplink", "downlink", "tor", "silent")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="live failover demo: flows, a link failure, the recovery (30-60 s)",
        description=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--kind", default="downlink", choices=KINDS,
                        help="what fails: a ToR uplink, an aggregation downlink, a whole ToR "
                             "of dual-homed NICs, or a link that silently drops 30%% "
                             "(default: downlink)")
    parser.add_argument("--fabric", default="hpn7", help="fabric to run on (default: hpn7)")
    parser.add_argument("--target", default="p4switch", choices=("p4switch", "bmv2"),
                        help="switch target (default: p4switch, the embedded one)")
    parser.add_argument("--before", type=float, default=5.0, metavar="S",
                        help="seconds of flows before the failure (default 5)")
    parser.add_argument("--hold", type=float, default=6.0, metavar="S",
                        help="seconds the failure lasts (default 6)")
    parser.add_argument("--after", type=float, default=4.0, metavar="S",
                        help="seconds of flows after the restore (default 4)")
    parser.add_argument("--out", type=Path, help="result directory (new or empty; default "
                                                 "results/demo/<timestamp>)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("fabric-lab demo: needs root for Mininet (sudo make demo)", file=sys.stderr)
        return 2
    for name in ("before", "hold", "after"):
        if getattr(args, name) <= 0:
            print(f"fabric-lab demo: --{name} must be > 0 seconds", file=sys.stderr)
            return 2
    from experiments.live_demo import run_demo
    from experiments.results import ResultDirError

    try:
        run_demo(kind=args.kind, fabric=args.fabric, target=args.target,
                 before_s=args.before, fail_s=args.hold, after_s=args.after, out=args.out)
    except (ResultDirError, ValueError, RuntimeError) as err:
        print(f"fabric-lab demo: {err}", file=sys.stderr)
        return 1
    return 0
