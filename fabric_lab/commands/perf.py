"""`fabric-lab perf COLLECTIVE`: nccl-tests on an emulated fabric.

Brings the fabric up (p4switch or BMv2 switches, routed), places one rank on every GPU (one GPU
beside each NIC, NVLink inside a server) and prints the table nccl-tests prints: sizes from -b
to -e by a factor -f, -w warm-up and -n timed iterations per size, out-of-place and in-place,
time, algbw and busbw in the modelled fabric's units (the emulated NIC rate stands for
--model-gbps; --raw prints emulated units), #wrong from payloads checked at the receivers.

    fabric-lab perf all_reduce -b 64K -e 256K -f 2 --fabric hpn7
    fabric-lab perf alltoall --algo pxn -w 0 -n 1 -F csv
"""

from __future__ import annotations

import argparse
import sys

import targets
from fabric_lab.commands.controller import DEFAULT_PROGRAM, load_fabric
from jobs.collectives import ALGORITHMS, COLLECTIVES, DEFAULT_ALGORITHM
from jobs.gpus import NVLINK_RATIO, cluster_from_fabric
from jobs.placement import ORDERS, rank_order
from jobs.scale import MODELLED_GBPS, Scale, raw


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "perf", help="nccl-tests on a fabric: a collective's time, algbw and busbw per size",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("collective", choices=COLLECTIVES, metavar="COLLECTIVE",
                        help=", ".join(COLLECTIVES))
    parser.add_argument("-b", "--minbytes", default="64K", help="smallest size (default 64K)")
    parser.add_argument("-e", "--maxbytes", default="256K", help="largest size (default 256K)")
    parser.add_argument("-f", "--stepfactor", type=int, default=2,
                        help="multiply the size by this (default 2)")
    parser.add_argument("-w", "--warmup_iters", type=int, default=1,
                        help="warm-up iterations per size (default 1; nccl-tests: 5)")
    parser.add_argument("-n", "--iters", type=int, default=2,
                        help="timed iterations per size and placement (default 2; nccl-tests: 20)")
    parser.add_argument("-c", "--check", type=int, default=1, choices=(0, 1),
                        help="check the data at the receivers (#wrong; default 1)")
    parser.add_argument("--fabric", default="hpn7", help="fabric name or JSON file (default hpn7)")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters of the fabric, e.g. --scale rate_mbps=20")
    parser.add_argument("--algo", help="algorithm: " + "; ".join(
        f"{c}: {', '.join(a)}" for c, a in ALGORITHMS.items()))
    parser.add_argument("--order", default="naive", choices=ORDERS,
                        help="rank order (default naive)")
    parser.add_argument("--root", type=int, default=0, help="root rank of broadcast (default 0)")
    parser.add_argument("--target", default="p4switch", choices=targets.CHOICES,
                        help="switch target (default p4switch)")
    parser.add_argument("-F", "--format", default="table", choices=("table", "csv"),
                        help="table (nccl-tests' output, default) or csv")
    parser.add_argument("--raw", action="store_true",
                        help="emulated units: no scaling of times and bandwidths")
    parser.add_argument("--model-gbps", type=float, default=MODELLED_GBPS,
                        help=f"NIC rate the emulated links stand for (default {MODELLED_GBPS:g})")
    parser.add_argument("--nvlink-ratio", type=float, default=NVLINK_RATIO,
                        help=f"NVLink rate per GPU and direction / NIC rate (default "
                             f"{NVLINK_RATIO:g})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from experiments.framework.session import FabricSession
    from jobs.perf import (
        PerfReport,
        format_csv,
        header_lines,
        measure,
        nccl_size,
        parse_size,
        row_line,
        sizes,
        trailer_lines,
    )
    from jobs.runner import JobRunner

    try:
        spec = load_fabric(args.fabric, args.scale)
        cluster = cluster_from_fabric(spec, nvlink_ratio=args.nvlink_ratio)
        ranks = rank_order(cluster, args.order, spec)
        algorithm = args.algo or DEFAULT_ALGORITHM[args.collective]
        if algorithm not in ALGORITHMS[args.collective]:
            raise ValueError(f"{args.collective} has no algorithm {algorithm!r} (one of "
                             f"{', '.join(ALGORITHMS[args.collective])})")
        lo, hi = parse_size(args.minbytes), parse_size(args.maxbytes)
        size_list = sizes(lo, hi, args.stepfactor)
        too_small = [b for b in size_list if nccl_size(args.collective, b, len(ranks))[0] == 0]
        if too_small:
            raise ValueError(f"{too_small[0]} B is too small for {args.collective} on "
                             f"{len(ranks)} ranks (at least {16 * len(ranks)} B)")
        if args.iters < 1 or args.warmup_iters < 0:
            raise ValueError("-n must be >= 1 and -w >= 0")
        if not 0 <= args.root < len(ranks):
            raise ValueError(f"--root must be a rank 0..{len(ranks) - 1}")
        if args.model_gbps <= 0:
            raise ValueError("--model-gbps must be > 0")
    except ValueError as err:
        print(f"fabric-lab perf: {err}", file=sys.stderr)
        return 2
    scale = raw(cluster.link_bps) if args.raw else Scale(cluster.link_bps, args.model_gbps * 1e9)
    check = bool(args.check)
    g = cluster.gpus_per_server
    report = PerfReport(args.collective, algorithm, args.order, header=[
        f"Emulated fabric {spec.name} ({args.target}): {len(ranks)} ranks on "
        f"{len(cluster.servers)} servers of {g} GPU(s); {args.collective} ({algorithm}), rank "
        f"order {args.order}",
        f"Scale: {scale.describe()}",
        f"NVLink: modelled as time at {cluster.nvlink_ratio:g}x the NIC rate "
        f"({cluster.nvlink_bps / 1e6:g} Mb/s emulated); in-server transfers use no fabric link",
    ])
    table = args.format == "table"
    print(f"fabric-lab perf: bringing up {spec.name} on {args.target} ...", file=sys.stderr,
          flush=True)
    with FabricSession(spec, program=DEFAULT_PROGRAM, target=args.target) as session, \
            JobRunner(session, cluster, ranks, check=check) as runner:
        if table:
            print("\n".join(header_lines(
                report, min_bytes=lo, max_bytes=hi, factor=args.stepfactor,
                warmup=args.warmup_iters, iters=args.iters, check=check, ranks=ranks,
                pids=runner.pids())), flush=True)
        report.rows = measure(
            runner, args.collective, algorithm, ranks, size_list, warmup=args.warmup_iters,
            iters=args.iters, scale=scale, root=args.root, check=check,
            on_row=(lambda row: print(row_line(row, check), flush=True)) if table else None)
    if table:
        print("\n".join(trailer_lines(report)), flush=True)
    else:
        sys.stdout.write(format_csv(report))
    return 1 if report.errors else 0
