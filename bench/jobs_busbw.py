"""all_reduce bus bandwidth per fabric, algorithm, rank order and size (`fabric-lab perf`'s
measurement, `jobs.perf.measure`), on real fabrics at their default scale.

Cases: leaf-spine ring; HPN 7.0 and AIPod ring vs hierarchical; BiGraph ring, and
halving-doubling with naive vs EFLOPS-remapped ranks. Each fabric comes up once (p4switch by
default); every row is -w warm-up and -n timed iterations out of place and in place, as
nccl-tests. Prints one line per (fabric, algorithm, order, size): mean time, algbw and busbw in
the modelled fabric's units (10 Mb/s emulated links stand for 400 Gb/s), and #wrong.
Needs root. usage: bench/jobs_busbw.py [--quick] [--target bmv2] [--fabrics hpn7,aipod]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import targets
from experiments.framework.session import FabricSession
from jobs.gpus import cluster_from_fabric
from jobs.perf import measure
from jobs.placement import rank_order
from jobs.runner import JobRunner
from jobs.scale import MODELLED_GBPS, Scale
from topos import build_fabric
from topos.relocate import prefixed

PROGRAM = Path(__file__).resolve().parents[1] / "p4src" / "ecmp.p4"
# fabric: the (algorithm, rank order) pairs measured on it
CASES: dict[str, list[tuple[str, str]]] = {
    "leafspine": [("ring", "naive")],
    "hpn7": [("ring", "naive"), ("hierarchical", "naive")],
    "aipod": [("ring", "naive"), ("hierarchical", "naive")],
    "bigraph": [("ring", "naive"), ("hd", "naive"), ("hd", "remap")],
}
SIZES = [64 << 10, 256 << 10, 1 << 20]
QUICK_SIZES = [64 << 10]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"one size ({QUICK_SIZES[0] >> 10} KB), no warm-up, one timed "
                             f"iteration per placement")
    parser.add_argument("--target", default="p4switch", choices=targets.CHOICES)
    parser.add_argument("--fabrics", default=",".join(CASES),
                        help=f"comma-separated subset of {', '.join(CASES)}")
    parser.add_argument("-w", "--warmup", type=int, default=1)
    parser.add_argument("-n", "--iters", type=int, default=2)
    args = parser.parse_args()
    fabrics = args.fabrics.split(",")
    unknown = [f for f in fabrics if f not in CASES]
    if unknown:
        parser.error(f"unknown fabric(s) {', '.join(unknown)} (one of {', '.join(CASES)})")
    sizes = QUICK_SIZES if args.quick else SIZES
    warmup, iters = (0, 1) if args.quick else (args.warmup, args.iters)
    print(f"# all_reduce, {args.target}, -w {warmup} -n {iters}; time (us), algbw and busbw "
          f"(GB/s) in the modelled fabric's units (the emulated NIC links stand for "
          f"{MODELLED_GBPS:g} Gb/s), each the mean of out-of-place and in-place")
    print(f"{'fabric':<10}{'ranks':>6}  {'algorithm':<13}{'order':<7}{'size (B)':>10}"
          f"{'time (us)':>11}{'algbw':>8}{'busbw':>8}{'#wrong':>7}")
    for index, fabric in enumerate(fabrics):
        spec = prefixed(build_fabric(fabric), "bj", 14600 + 25 * index, 14700 + 25 * index)
        cluster = cluster_from_fabric(spec)
        scale = Scale(cluster.link_bps, MODELLED_GBPS * 1e9)
        started = time.monotonic()
        with FabricSession(spec, program=PROGRAM, target=args.target) as session:
            for algorithm, order in CASES[fabric]:
                ranks = rank_order(cluster, order, spec)
                with JobRunner(session, cluster, ranks) as runner:
                    rows = measure(runner, "all_reduce", algorithm, ranks, sizes, warmup=warmup,
                                   iters=iters, scale=scale)
                for row in rows:
                    both = (row.out_of_place, row.in_place)
                    mean = [sum(getattr(m, k) for m in both) / 2
                            for k in ("time_us", "algbw_gbs", "busbw_gbs")]
                    wrong = sum(m.wrong or 0 for m in both)
                    print(f"{fabric:<10}{len(ranks):>6}  {algorithm:<13}{order:<7}{row.size:>10}"
                          f"{mean[0]:>11.2f}{mean[1]:>8.2f}{mean[2]:>8.2f}{wrong:>7}", flush=True)
        print(f"# {fabric}: {time.monotonic() - started:.0f} s wall time (bring-up included)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
