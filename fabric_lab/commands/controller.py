"""`fabric-lab controller --fabric FILE.json`: program every switch, then keep running.

Connects to every switch of the fabric over P4Runtime as primary, pushes the pipeline where the
switch does not already run it, writes only the routes that differ, and stays connected; with
link watching on (the default) it reroutes when a switch interface goes down or comes back, or
when the link probes find a link that stays up but drops packets; each event is logged with its
detection and reroute times.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from controller.fabric import FabricController, ProgrammingError
from controller.linkwatch import LinkWatcher
from controller.p4rt import P4RuntimeError
from controller.pipeline import PipelineError, build_pipeline
from controller.probes import LinkProber
from controller.queues import configure_queues
from controller.reconverge import Reconverger
from fabric_lab.arguments import HASH_SEED, QUEUE_RATE_PPS, number
from mechanisms import program_path
from targets import CHOICES, RuntimeCliError, Target, get_target
from topos import FABRICS, FabricSpec, build_fabric
from topos.builders import parse_scale
from topos.errors import InputError
from topos.fabric_file import read_fabric_file
from topos.values import ELECTION_ID, QUEUE_PKTS

DEFAULT_PROGRAM = program_path("ecmp")


def add_program_args(parser: argparse.ArgumentParser) -> None:
    """Options shared with `fabric-lab up`."""
    parser.add_argument("--program", type=Path, default=DEFAULT_PROGRAM, metavar="P4",
                        help="P4 program to run on every switch (default: p4src/ecmp.p4)")
    parser.add_argument("--hash-seed", type=number(HASH_SEED), metavar="N",
                        help="the same ECMP hash seed on every switch (default: one per switch)")
    parser.add_argument("--election-id", type=number(ELECTION_ID), default=1, metavar="N",
                        help="P4Runtime election id (low 64 bits, 1..2^64-1; default 1)")
    parser.add_argument("--queue-depth", type=number(QUEUE_PKTS), metavar="PKTS",
                        help="egress queue depth of every port, via the runtime CLI")
    parser.add_argument("--queue-rate", type=number(QUEUE_RATE_PPS), metavar="PPS",
                        help="egress queue rate limit of every port in packets/s (0 = none)")


def apply_queue_args(args: argparse.Namespace, spec: FabricSpec, target: Target | str) -> None:
    """--queue-depth / --queue-rate on every switch (raises RuntimeCliError)."""
    if args.queue_depth is not None or args.queue_rate is not None:
        configure_queues(spec, target, depth=args.queue_depth, rate_pps=args.queue_rate)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "controller", help="program a running fabric's switches over P4Runtime and stay on",
        description=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--fabric", required=True, metavar="FILE.json|NAME",
                        help="fabric model as JSON (fabric-lab show --json) or a fabric name")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters when --fabric is a name")
    parser.add_argument("--target", default="auto", choices=CHOICES,
                        help="what the switches run, for the pipeline format (default: auto = p4switch)")
    add_program_args(parser)
    parser.add_argument("--once", action="store_true",
                        help="program the switches and exit instead of staying on")
    parser.add_argument("--no-watch-links", dest="watch_links", action="store_false",
                        help="do not reroute on interface state changes or probe verdicts")
    parser.set_defaults(func=run)


def load_fabric(text: str, scale: list[str]) -> FabricSpec:
    """A fabric from a JSON file or a builder name (+ scale parameters), every field and
    parameter checked before anything is built; InputError (FabricError) naming the faults."""
    path = Path(text)
    if path.suffix == ".json" or path.exists():
        if scale:
            raise InputError("--scale applies to a fabric name, not a JSON file")
        return read_fabric_file(path)
    if text not in FABRICS:
        raise InputError(f"{text!r} is neither a fabric JSON file nor one of: "
                         f"{', '.join(sorted(FABRICS))}")
    return build_fabric(text, **parse_scale(scale))


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        spec = load_fabric(args.fabric, args.scale)
        target = get_target(args.target)
        pipeline = build_pipeline(args.program, target)
    except (ValueError, PipelineError) as err:
        print(f"fabric-lab controller: {err}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    ctl = FabricController(spec, pipeline, election_id=(0, args.election_id),
                           hash_seed=args.hash_seed)
    loops: list = []
    try:
        ctl.connect()
        if args.watch_links:
            for switch, port in LinkWatcher(spec, lambda *_: None).down_now():
                ctl.mark_link(switch, port, up=False)
        for report in ctl.program():
            print(report, flush=True)
        apply_queue_args(args, spec, target)
        if args.once:
            return 0
        if args.watch_links:  # reroute on port changes and on links the probes find dropping
            rc = Reconverger(ctl).start()
            loops = [LinkProber(ctl, on_verdict=rc.isolate).start(), rc]
        print(f"controller: {len(spec.switches)} switches programmed; running until "
              f"interrupted", flush=True)
        stop.wait()
        return 0
    except (ProgrammingError, P4RuntimeError, RuntimeCliError) as err:
        print(f"fabric-lab controller: {err}", file=sys.stderr)
        return 1
    finally:
        for loop in loops:
            loop.stop()
        ctl.close()
