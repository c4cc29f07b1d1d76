"""Mininet bring-up and teardown time of each fabric's hosts and links (no switch programs).

Prints, per fabric at its default scale: size, model build time, time to bring the network up
(namespaces, veth pairs, addresses, static ARP, tc shaping) and to take it down, median of N runs.
Needs root. usage: bench/topos_bringup.py [--repeat N] [FABRIC ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topos import FABRICS, build_fabric
from topos.mininet import FabricNetwork


def measure(name: str, repeat: int) -> tuple[object, float, float, float]:
    builds, ups, downs = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        spec = build_fabric(name)
        t1 = time.perf_counter()
        with tempfile.TemporaryDirectory() as run_dir:
            net = FabricNetwork(spec, None, run_dir=Path(run_dir))
            net.start()
            t2 = time.perf_counter()
            net.stop()
            t3 = time.perf_counter()
        builds.append(t1 - t0)
        ups.append(t2 - t1)
        downs.append(t3 - t2)
    return spec, statistics.median(builds), statistics.median(ups), statistics.median(downs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fabrics", nargs="*", default=sorted(FABRICS))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'fabric':<10}{'switches':>9}{'NICs':>6}{'links':>7}{'model ms':>10}"
          f"{'up s':>8}{'down s':>8}   (median of {args.repeat})")
    for name in args.fabrics:
        spec, build, up, down = measure(name, args.repeat)
        print(f"{name:<10}{len(spec.switches):>9}{len(spec.host_nics()):>6}{len(spec.links):>7}"
              f"{build * 1000:>10.1f}{up:>8.2f}{down:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
