"""`fabric-lab diagnose`: name the link that drops or slows traffic in a running fabric.

Reads every switch's port counters (runtime CLI), sends INT-carrying probe bursts between the
fabric's own NICs, reads the counters again, and ranks what it found, from those alone:
- drops:  a link whose far end received fewer frames than the near end sent, or on which the
          probes of flows through it were lost;
- slow:   an egress that, with a queue behind it, serves well below its link's rate (INT);
- paused: a data queue held by PFC pause frames.
It takes a few seconds and never writes to the switches, so a running `fabric-lab up` (its
controller primary) is left as it is. The fabric is the one running (its run-state file), built
by name at its default scale; give --fabric (a JSON file or name with --scale) otherwise.

    sudo fabric-lab diagnose
    sudo fabric-lab diagnose --json
    fabric-lab up leafspine --run "fabric-lab diagnose"
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import targets
from fabric_lab.commands.controller import load_fabric
from targets import RuntimeCliError
from topos import FABRICS, FabricSpec, build_fabric, validate
from topos.mininet.runstate import RunState


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diagnose", help="name the link that drops or slows traffic (INT and port counters)",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--fabric", metavar="FILE.json|NAME",
                        help="fabric model (default: the running fabric, or $FABRIC_LAB_FABRIC)")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters when --fabric is a name")
    parser.add_argument("--target", default="auto", choices=targets.CHOICES,
                        help="what the switches run (default: auto = p4switch)")
    parser.add_argument("--nics", nargs="+", metavar="NIC",
                        help="probe between these NICs only (default: every NIC)")
    parser.add_argument("--flows", type=int, metavar="N",
                        help="UDP source ports (ECMP paths) per NIC pair (default 4, fewer "
                             "with many NICs)")
    parser.add_argument("--rounds", type=int, default=3, metavar="N",
                        help="bursts per flow (default 3)")
    parser.add_argument("--burst", type=int, default=4, metavar="N",
                        help="probe frames per burst (default 4)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def _fabric(args: argparse.Namespace) -> tuple[FabricSpec, RunState]:
    """The fabric's model and the run state of its running network."""
    from controller.diagnose.hosts import NoFabric, running_fabric
    where = args.fabric or os.environ.get("FABRIC_LAB_FABRIC")
    if where:
        if where.lstrip().startswith("{"):  # `fabric-lab up --run` passes the model itself
            spec = validate(FabricSpec.from_json(where))
        else:
            spec = load_fabric(where, args.scale if args.fabric else [])
        return spec, running_fabric(spec.name)
    state = running_fabric()
    if state.fabric not in FABRICS:
        raise NoFabric(f"the running fabric {state.fabric!r} is not one of the lab's by name: "
                       f"give its model with --fabric FILE.json")
    spec = build_fabric(state.fabric)
    if set(state.interfaces) - {i for ln in spec.links for i in (ln.a.intf, ln.b.intf)}:
        raise NoFabric(f"the running {state.fabric} is not at its default scale: give "
                       f"--fabric {state.fabric} --scale K=V ...")
    return spec, state


def _arguments(args: argparse.Namespace) -> list[str]:
    return [f"--{name} must be >= 1, got {value}" for name, value in
            (("flows", args.flows), ("rounds", args.rounds), ("burst", args.burst))
            if value is not None and value < 1]


def run(args: argparse.Namespace) -> int:
    # the probing machinery (scapy among it) loads when the command runs, not with the CLI
    from controller.diagnose.counters import TelemetryMissing
    from controller.diagnose.hosts import NoFabric, fabric_hosts
    from controller.diagnose.probes import ProbeError, ProbePlan
    from controller.diagnose.run import diagnose

    errors = _arguments(args)
    if errors:
        print("fabric-lab diagnose: " + "; ".join(errors), file=sys.stderr)
        return 2
    try:
        spec, state = _fabric(args)
        hosts = fabric_hosts(spec, state)
        plan = ProbePlan.between(spec, args.nics, flows=args.flows, rounds=args.rounds,
                                 burst=args.burst)
        result = diagnose(spec, hosts, args.target, plan=plan)
    except (NoFabric, ProbeError, TelemetryMissing, RuntimeCliError, ValueError) as err:
        print(f"fabric-lab diagnose: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result.to_dict(), indent=1) if args.json else result.table())
    return 0
