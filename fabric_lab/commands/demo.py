"""`fabric-lab demo`: the live failover demo (about a minute).

Brings up the HPN 7.0 fabric on the embedded p4switch target, starts RoCEv2 flows (1600
packets/s of 4096 bytes each, 52 Mb/s, on jumbo-frame links; 150/s of 256 bytes on BMv2:
docs/rates.md), so a 50 ms outage is 80 packets lost, and runs three recoveries back to back:
a ToR uplink fails (data-plane fast failover: nothing to see), an aggregation downlink fails (the
controller reroutes: a short gap), an uplink silently drops 30% (the probes find it: a long
lossy stretch); `--contrast` adds the downlink failure with the controller paused (no failover:
dark until repaired). The terminal shows every flow live; `--web` serves the same on a page
(127.0.0.1). At the end: loss windows per stage and flow, CSV files and timeline.png. Exits 1
when a flow did not recover. Needs root (Mininet).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import targets
from fabric_lab.arguments import number
from fabric_lab.web_options import add_web_args, check_web_port
from topos.errors import MachineError
from topos.values import Number

STAGES = ("uplink", "downlink", "silent", "tor", "none")
PHASE_S = Number(0, 3600, unit="s")  # flows before, during and after a failure
FLOW_PPS = Number(0, 1e6, above=True, unit="packets/s")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="live failover demo: flows, three kinds of failure, the recoveries",
        description=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--kind", action="append", choices=STAGES, metavar="KIND",
                        help="a stage to run, in order; repeatable (default: uplink downlink "
                             "silent). uplink, downlink, silent, tor (a whole ToR of "
                             "dual-homed NICs), none (a downlink with the controller paused)")
    parser.add_argument("--contrast", action="store_true",
                        help="end with a failure the controller does not handle (kind none)")
    parser.add_argument("--fabric", default="hpn7", help="fabric to run on (default: hpn7)")
    parser.add_argument("--target", default="p4switch", choices=targets.NAMES,
                        help="switch target (default: p4switch, the embedded one)")
    parser.add_argument("--before", type=number(PHASE_S), default=3.0, metavar="S",
                        help="seconds of flows before the first failure (default 3)")
    parser.add_argument("--hold", type=number(PHASE_S), default=3.0, metavar="S",
                        help="seconds each failure lasts (default 3; a silent drop at least 4); a "
                             "downlink or silent drop lasts until the controller has rerouted "
                             "(at most 12 s)")
    parser.add_argument("--after", type=number(PHASE_S), default=3.0, metavar="S",
                        help="seconds of flows after the last restore (default 3)")
    parser.add_argument("--pps", type=number(FLOW_PPS), default=None, metavar="N",
                        help="packets per second per flow (default: 1600 of 4096 bytes, 52 Mb/s, "
                             "on p4switch; 150 of 256 bytes on BMv2; 8 flows)")
    add_web_args(parser, "also show it in the browser: serves a page (--web-port, --web-host); "
                         "open the URL it prints, with its token")
    parser.add_argument("--out", type=Path, help="result directory (new or empty; default "
                                                 "results/demo/<timestamp>)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("fabric-lab demo: needs root for Mininet (sudo make demo)", file=sys.stderr)
        return MachineError.exit_status
    for name in ("before", "hold", "after", "pps"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            print(f"fabric-lab demo: --{name} must be > 0", file=sys.stderr)
            return 2
    from experiments.demo import DEFAULT_KINDS, DemoFailed, run_demo
    from experiments.framework.results import ResultDirError

    check_web_port(args)
    kinds = list(args.kind or DEFAULT_KINDS)
    if args.contrast and "none" not in kinds:
        kinds.append("none")
    attach = None
    if args.web:
        from fabric_lab.web import demo_attach

        attach = demo_attach(args.web_port, args.target, args.web_host)
    try:
        run_demo(kinds=kinds, fabric=args.fabric, target=args.target, before_s=args.before,
                 hold_s=args.hold, after_s=args.after, pps=args.pps, out=args.out,
                 attach=attach)
    except DemoFailed as err:
        print(f"fabric-lab demo: FAILED: {err}", file=sys.stderr)
        return 1
    except (ResultDirError, ValueError, RuntimeError) as err:
        print(f"fabric-lab demo: {err}", file=sys.stderr)
        return int(getattr(err, "exit_status", 1))
    return 0
