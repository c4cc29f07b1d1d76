"""`fabric-lab perf COLLECTIVE`: nccl-tests on an emulated fabric.

Brings the fabric up (p4switch or BMv2 switches, routed), puts one rank on every GPU (one GPU
beside each NIC, NVLink inside a server), each rank an engine in its NIC's namespace, measures
the fabric's alpha and beta, and prints the table nccl-tests prints: sizes from -b to -e by a
factor -f, -w warm-up and -n timed iterations back to back, out of place and in place, time,
algbw and busbw in the modelled fabric's units (an emulated NIC stands for --model-gbps; --raw
prints emulated units), #wrong from every rank's output compared element by element with
what the collective promises (-c check iterations). Then the alpha-beta bound of each row.

    fabric-lab perf all_reduce -b 1M -e 4M --fabric leafspine --scale leaves=4 hosts_per_leaf=4
    fabric-lab perf all_reduce --fabric hpn7 --algo hierarchical -d half -o max
    fabric-lab perf alltoall --algo pxn -w 0 -n 1 -F csv
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import targets
from fabric_lab.commands.controller import DEFAULT_PROGRAM, load_fabric
from jobs.ccl.collectives import COLLECTIVES
from jobs.ccl.communicator import roce_mtu
from jobs.ccl.datatypes import REDOPS, TYPES, names
from jobs.gpus import NVLINK_RATIO, cluster_from_fabric
from jobs.placement import ORDERS, rank_order
from jobs.scale import MODELLED_GBPS, Scale, raw
from topos.model import FabricSpec
from topos.values import MODEL_GBPS, RATE_MBPS
from topos.values import NVLINK_RATIO as NVLINK

LINK_MBPS = 100.0  # the NIC links' rate, unless --scale rate_mbps=... says otherwise
# the largest size of a sweep that finishes: 1 GiB crosses a 100 Mb/s NIC in 86 s, and every
# rank holds its buffers in this machine's memory
MAX_BYTES = 1 << 30
LINK_MTU = 4200  # RoCE MTU 4096 fits
T = TypeVar("T")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "perf", help="nccl-tests on a fabric: a collective's time, algbw and busbw per size",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    names_ = list(COLLECTIVES)
    parser.add_argument("collective", choices=names_, metavar="COLLECTIVE",
                        help=", ".join(names_))
    parser.add_argument("-b", "--minbytes", default="1M", help="smallest size (default 1M)")
    parser.add_argument("-e", "--maxbytes", default="4M", help="largest size (default 4M)")
    parser.add_argument("-f", "--stepfactor", type=int, default=2,
                        help="multiply the size by this (default 2)")
    parser.add_argument("-i", "--stepbytes", default="0",
                        help="with -f 1: add this many bytes per step")
    parser.add_argument("-w", "--warmup_iters", type=int, default=1,
                        help="warm-up iterations per size (default 1, as nccl-tests)")
    parser.add_argument("-n", "--iters", type=int, default=5,
                        help="timed iterations per size and placement (default 5; nccl-tests: "
                             "20, which the emulated links make slow)")
    parser.add_argument("-c", "--check", type=int, default=1,
                        help="check iterations (default 1; 0: no check, #wrong N/A)")
    parser.add_argument("-d", "--datatype", default="float",
                        help=f"{', '.join(TYPES)} or all (default float)")
    parser.add_argument("-o", "--op", default="sum",
                        help=f"{', '.join(REDOPS)} or all (default sum)")
    parser.add_argument("-a", "--average", type=int, default=1,
                        help="time over ranks: 0 rank 0, 1 average (default), 2 min, 3 max")
    parser.add_argument("-z", "--blocking", type=int, default=0, choices=(0, 1),
                        help="1: launch every iteration on its own (default 0)")
    parser.add_argument("-r", "--root", type=int, default=0, help="root rank (default 0)")
    parser.add_argument("--fabric", default="hpn7", help="fabric name or JSON file (default hpn7)")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters of the fabric, e.g. --scale segments=1")
    parser.add_argument("--link-mbps", type=float,
                        help=f"a named fabric's link rate (default {LINK_MBPS:g}; --scale "
                             f"rate_mbps=... wins; a JSON fabric keeps its own)")
    parser.add_argument("--mtu", type=int, default=LINK_MTU,
                        help=f"the links' MTU (default {LINK_MTU}: RoCE MTU 4096)")
    parser.add_argument("--algo", help="algorithm: " + "; ".join(
        f"{c.name}: {', '.join(c.algorithms)}" for c in COLLECTIVES.values()))
    parser.add_argument("--order", default="topology", choices=ORDERS,
                        help="rank order (default topology)")
    parser.add_argument("--channels", type=int,
                        help="channels (default: every NIC port and, on servers of several "
                             "GPUs, every rail; fewer where a size gives a channel under 32 KiB, "
                             "as NCCL)")
    parser.add_argument("--slice", default="64K", help="largest message (default 64K)")
    parser.add_argument("--target", default="p4switch", choices=targets.CHOICES,
                        help="switch target (default p4switch)")
    parser.add_argument("-F", "--format", default="table", choices=("table", "csv"),
                        help="table (nccl-tests' output, default) or csv")
    parser.add_argument("--raw", action="store_true",
                        help="emulated units: no scaling of times and bandwidths")
    parser.add_argument("--model-gbps", type=float, default=MODELLED_GBPS,
                        help=f"the NIC an emulated NIC stands for (default {MODELLED_GBPS:g})")
    parser.add_argument("--nvlink-ratio", type=float, default=NVLINK_RATIO,
                        help=f"NVLink rate per GPU and direction / NIC rate (default "
                             f"{NVLINK_RATIO:g})")
    parser.set_defaults(func=run)


def plane_lines(spec: FabricSpec, before: Counter, after: Counter) -> list[str]:
    """The bytes the switches of each plane sent over the measurement (dual-plane fabrics)."""
    plane = {sw.name: sw.plane for sw in spec.switches if sw.plane}
    sent: Counter = Counter()
    for (sw, _), b in after.items():
        if sw in plane:
            sent[plane[sw]] += b - before.get((sw, _), 0)
    total = sum(sent.values())
    if len(sent) < 2 or total <= 0:
        return []
    return ["# Bytes the switches of each plane sent over the measurement: " + ", ".join(
        f"plane {p} {b / 1e6:.1f} MB ({b / total:.1%})" for p, b in sorted(sent.items()))]


def _prepare(args: argparse.Namespace) -> tuple:
    # the collective, algorithm, sizes, types, ops, options, RoCE MTU, fabric, cluster, ranks
    """Everything checked before anything starts; ValueError naming every problem."""
    from jobs.ccl.collectives import build, get
    from jobs.perf import PerfOptions, parse_size, sizes

    problems: list[str] = []

    def check(fn: Callable[[], T], what: str) -> T | None:
        try:
            return fn()
        except ValueError as e:
            problems.append(f"{what}: {e}" if what else str(e))
            return None

    coll = get(args.collective)
    algorithm = check(lambda: coll.algorithm(args.algo), "")
    lo = check(lambda: parse_size(args.minbytes), "-b")
    hi = check(lambda: parse_size(args.maxbytes), "-e")
    step = check(lambda: parse_size(args.stepbytes), "-i")
    size_list = check(lambda: sizes(lo, hi, args.stepfactor, step or 0), "") \
        if lo and hi and hi <= MAX_BYTES and step is not None else None
    dtypes = check(lambda: names(args.datatype, TYPES), "-d")
    ops = check(lambda: names(args.op, REDOPS), "-o")
    slice_bytes = check(lambda: parse_size(args.slice), "--slice")
    payload = check(lambda: roce_mtu(args.mtu), "--mtu")
    numbers = [("--model-gbps", args.model_gbps, MODEL_GBPS),
               ("--nvlink-ratio", args.nvlink_ratio, NVLINK),
               ("--link-mbps", args.link_mbps, RATE_MBPS)]
    problems += [f"{option} {fault}" for option, value, quantity in numbers
                 if value is not None and (fault := quantity.problem(value))]
    if hi is not None and hi > MAX_BYTES:
        problems.append(f"-e: at most {MAX_BYTES >> 30}G (every rank's buffers are in this "
                        f"machine's memory), got {args.maxbytes}")
    options = PerfOptions(warmup=args.warmup_iters, iters=args.iters, check=args.check,
                          average=args.average, blocking=bool(args.blocking), root=args.root,
                          channels=args.channels, slice_bytes=slice_bytes or 65536)
    problems += options.problems()
    scale = list(args.scale)
    if Path(args.fabric).suffix == ".json" or Path(args.fabric).is_file():
        if args.link_mbps is not None:
            problems.append("--link-mbps applies to a fabric name; a JSON fabric has its "
                            "links' rates")
    elif not any(kv.startswith("rate_mbps=") for kv in scale):
        scale.append(f"rate_mbps={args.link_mbps or LINK_MBPS:g}")
    spec = check(lambda: load_fabric(args.fabric, scale).with_mtu(args.mtu), "")
    cluster = ranks = None
    if spec is not None:
        cluster = check(lambda: cluster_from_fabric(spec, nvlink_ratio=args.nvlink_ratio), "")
        if cluster is not None:
            ranks = check(lambda: rank_order(cluster, args.order, spec), "")
    if ranks is not None:
        if not 0 <= args.root < len(ranks):
            problems.append(f"-r must be a rank 0..{len(ranks) - 1}, got {args.root}")
        elif algorithm is not None:
            check(lambda: build(args.collective, algorithm, ranks, 1024, args.root), "")
    if problems:
        raise ValueError("; ".join(problems))
    return (coll, algorithm, lo, hi, step, size_list, dtypes, ops, options, payload, spec,
            cluster, ranks)


def run(args: argparse.Namespace) -> int:
    from experiments.framework.session import FabricSession
    from jobs.ccl.communicator import Communicator, Transport
    from jobs.ccl.timing import measure as alpha_beta
    from jobs.perf import (
        PerfReport,
        bound_lines,
        format_csv,
        header_lines,
        measure,
        row_line,
        trailer_lines,
        type_names,
    )
    from jobs.train_fabric import switch_tx

    try:
        (coll, algorithm, lo, hi, step, size_list, dtypes, ops, options, payload, spec, cluster,
         ranks) = _prepare(args)
    except ValueError as err:
        print(f"fabric-lab perf: {err}", file=sys.stderr)
        return 2
    ports = cluster.ports
    scale = raw(cluster.nic_bps) if args.raw else Scale(cluster.nic_bps, args.model_gbps * 1e9)
    g = cluster.gpus_per_server
    report = PerfReport(coll.name, algorithm, args.order, header=[
        f"fabric-lab perf: nccl-tests' {coll.name}_perf on an emulated fabric",
        f"Emulated fabric {spec.name} ({args.target}): {len(ranks)} ranks on "
        f"{len(cluster.servers)} servers of {g} GPU(s), NICs of {ports} port(s); "
        f"{coll.name} ({algorithm}), rank order {args.order}",
        f"Scale: {scale.describe(ports)}",
        f"NVLink: {cluster.nvlink_ratio:g}x the NIC ({cluster.nvlink_bps / 1e6:g} Mb/s emulated "
        f"per GPU and direction), data through shared memory; no fabric link",
    ])
    table = args.format == "table"
    print(f"fabric-lab perf: bringing up {spec.name} on {args.target} ...", file=sys.stderr,
          flush=True)
    hosts_of = None
    with FabricSession(spec, program=DEFAULT_PROGRAM, target=args.target) as session:
        hosts_of = [session.host(gpu.nic) for gpu in ranks]
        with Communicator(hosts_of, ranks, spec, nvlink_bps=cluster.nvlink_bps,
                          transport=Transport(mtu=payload).scaled(cluster.link_bps)) as comm:
            ab = alpha_beta(comm)
            report.header.append(
                f"Alpha-beta measured: alpha {ab.alpha_s * 1e6:.0f} us per message hop "
                f"emulated ({scale.time_s(ab.alpha_s) * 1e6:.3g} us modelled), beta "
                f"1/({8 / ab.beta_s / 1e6:.1f} Mb/s) per NIC = {ab.nic_efficiency:.1%} of its "
                f"{ab.nic_bps / 1e6:g} Mb/s (every NIC sending)")
            if table:
                print("\n".join(header_lines(
                    report, min_bytes=lo, max_bytes=hi, factor=args.stepfactor,
                    warmup=options.warmup, iters=options.iters, check=options.check,
                    ranks=ranks, pids=comm.pids, step_bytes=step,
                    blocking=options.blocking)), flush=True)
            before = switch_tx(session)[1]
            report.rows = measure(
                comm, coll.name, algorithm, size_list, dtypes=type_names(dtypes), redops=ops,
                options=options, scale=scale, alpha_s=ab.alpha_s, order=ranks,
                on_row=(lambda row: print(row_line(row), flush=True)) if table else None)
            planes = plane_lines(spec, before, switch_tx(session)[1])
    if table:
        print("\n".join(trailer_lines(report) + bound_lines(report) + planes), flush=True)
    else:
        sys.stdout.write(format_csv(report))
    return 1 if report.errors else 0
