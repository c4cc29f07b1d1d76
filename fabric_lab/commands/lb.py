"""`fabric-lab lb --mode MODE`: choose the load-balancing mode of a running fabric.

Runs the mode's program (p4src/ecmp.p4, flowlet.p4 or dlb.p4) on every switch, pushed only
where it does not run yet (a push resets the switch: routes are rewritten at once), then sets the
mode's knobs: the flowlet gap, or the host-facing ports where DLB adds reorder tags. Prints what
every switch holds afterwards. The fabric comes from --fabric, or from FABRIC_LAB_FABRIC (a JSON
file of the model, or the model itself) under `fabric-lab up FABRIC --run CMD`.

    fabric-lab up leafspine --run "fabric-lab lb --mode flowlet --flowlet-gap-us 20000"
"""

from __future__ import annotations

import argparse
import os
import sys

from controller.fabric import FabricController, ProgrammingError
from controller.lb import MODES, LbError, LoadBalancing, program_path
from controller.p4rt import P4RuntimeError
from controller.pipeline import PipelineError, build_pipeline, resolve_target
from fabric_lab.commands.controller import load_fabric
from topos import FabricSpec, validate


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lb", help="choose the load-balancing mode (and flowlet gap) of a running fabric",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--fabric", metavar="FILE.json|NAME",
                        help="fabric model (default: $FABRIC_LAB_FABRIC)")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters when --fabric is a name")
    parser.add_argument("--target", default="auto", choices=("auto", "p4switch", "bmv2"),
                        help="what the switches run, for the pipeline format (default: auto)")
    parser.add_argument("--mode", required=True, choices=MODES, help="load-balancing mode")
    parser.add_argument("--flowlet-gap-us", type=int, metavar="US",
                        help="flowlet gap in microseconds (flowlet mode; default 10000)")
    parser.add_argument("--election-id", type=int, default=1, metavar="N",
                        help="P4Runtime election id (low 64 bits; default 1)")
    parser.set_defaults(func=run)


def _fabric(args: argparse.Namespace) -> FabricSpec:
    if args.fabric:
        return load_fabric(args.fabric, args.scale)
    where = os.environ.get("FABRIC_LAB_FABRIC")
    if not where:
        raise ValueError("no fabric: give --fabric, or run under `fabric-lab up --run`")
    if where.lstrip().startswith("{"):  # the model itself rather than a file holding it
        return validate(FabricSpec.from_json(where))
    return load_fabric(where, [])


def run(args: argparse.Namespace) -> int:
    if args.flowlet_gap_us is not None and args.mode != "flowlet":
        print(f"fabric-lab lb: --flowlet-gap-us applies to mode flowlet, not {args.mode}",
              file=sys.stderr)
        return 2
    try:
        spec = _fabric(args)
        pipeline = build_pipeline(program_path(args.mode), resolve_target(args.target))
        with FabricController(spec, pipeline, election_id=(0, args.election_id)) as ctl:
            ctl.connect()
            pushed = sum(r.pipeline_pushed for r in ctl.program())
            lb = LoadBalancing(ctl)
            lb.configure(args.flowlet_gap_us)
            held = (lb.flowlet_gaps() if args.mode == "flowlet"
                    else lb.tagging_ports() if args.mode == "dlb" else {})
    except (ValueError, PipelineError, ProgrammingError, P4RuntimeError, LbError) as err:
        print(f"fabric-lab lb: {err}", file=sys.stderr)
        return 1
    print(f"{args.mode}.p4 on {len(spec.switches)} switches ({pushed} pushed)")
    for name in sorted(held):
        what = (f"flowlet gap {held[name]} us" if args.mode == "flowlet"
                else f"tags on ports {','.join(map(str, held[name])) or 'none'}")
        print(f"  {name}: {what}")
    return 0
