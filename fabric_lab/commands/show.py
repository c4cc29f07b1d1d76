"""`fabric-lab show FABRIC`: summary table of a fabric and a layered picture of it (FABRIC.png)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fabric_lab.commands.up import add_cluster_args
from topos import FABRICS, FabricSpec, build_fabric, fabric_parameters
from topos.analysis import path_classes, tier_summary
from topos.builders import parse_scale
from topos.filenames import file_part
from topos.placement import parse_servers, place


def scale_help() -> str:
    """Each fabric's scale parameters with their defaults (the epilog of `show --help`)."""
    lines = ["scale parameters (defaults):"]
    for name in sorted(FABRICS):
        params = " ".join(f"{k}={v}" for k, v in fabric_parameters(name).items())
        lines.append(f"  {name}: {params}")
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "show", help="summarise a fabric and draw it to FABRIC.png",
        description="Print switches, links and oversubscription per tier and the paths from one "
                    "NIC to the others, and draw the fabric in layers to FABRIC.png.",
        epilog=scale_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fabric", choices=sorted(FABRICS), metavar="FABRIC",
                        help=f"one of: {', '.join(sorted(FABRICS))}")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters, e.g. --scale segments=3 aggs_per_plane=1")
    parser.add_argument("--out", type=Path, default=Path("."), metavar="DIR",
                        help="directory for FABRIC.png (default: current directory)")
    parser.add_argument("--json", action="store_true",
                        help="also write the fabric model to FABRIC.json")
    add_cluster_args(parser, network=False)
    parser.set_defaults(func=run)


def summary(spec: FabricSpec) -> str:
    """The text printed by `show`: totals, a table per tier, path classes from the first NIC."""
    params = " ".join(f"{k}={v}" for k, v in spec.params.items())
    lines = [f"{spec.name}: {spec.description}", f"parameters: {params}",
             f"{len(spec.switches)} switches, {len(spec.host_nics())} NICs on "
             f"{len(spec.hosts)} servers, {len(spec.links)} links", ""]
    lines.append(f"{'tier':<5}{'roles':<18}{'switches':>9}{'down links':>12}{'up links':>10}"
                 f"{'down Mb/s':>11}{'up Mb/s':>9}{'down:up':>9}")
    for row in tier_summary(spec):
        ratio = f"{row.oversubscription:.2f}:1" if row.oversubscription is not None else "-"
        lines.append(f"{row.tier:<5}{'/'.join(row.roles):<18}{row.switches:>9}"
                     f"{row.down_links:>12}{row.up_links:>10}{row.down_mbps:>11g}"
                     f"{row.up_mbps:>9g}{ratio:>9}")
    src = spec.host_nics()[0]
    lines += ["", f"paths from {src.name} ({src.ip}) to the other NICs:"]
    for cls in path_classes(spec, src.name):
        dst = spec.nic(cls.example)
        noun = "switch" if cls.switches == 1 else "switches"
        lines.append(f"  {cls.count:>3} NIC(s) like {dst.name} ({dst.ip}): {cls.switches} {noun}, "
                     f"{cls.paths} equal-cost path(s)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from topos.drawing import draw

    try:
        spec = build_fabric(args.fabric, **parse_scale(args.scale))
    except ValueError as err:  # bad scale parameters or a fabric that fails validation
        print(f"fabric-lab show: {err}", file=sys.stderr)
        return 2
    try:
        placement = place(spec, parse_servers(args.servers), args.placement) \
            if args.servers else None
    except ValueError as err:
        print(f"fabric-lab show: {err}", file=sys.stderr)
        return 2
    print(summary(spec))
    if placement is not None:
        print("\n" + placement.describe(spec))
    args.out.mkdir(parents=True, exist_ok=True)
    png = draw(spec, args.out / f"{file_part(spec.name)}.png")
    print(f"\nwrote {png}")
    if args.json:
        path = args.out / f"{file_part(spec.name)}.json"
        path.write_text(spec.to_json() + "\n")
        print(f"wrote {path}")
    return 0
