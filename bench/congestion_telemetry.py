"""How long one telemetry sample and one PFC-watchdog poll take on a live p4switch fabric.

Brings up the incast fabric (2 leaves, 1 spine, Mininet + p4switch; root), then times
`TelemetrySampler.sample()` over the four watched data queues (7 runtime-CLI round trips per
queue) and a watchdog poll (one `queue_stats` per queue). The sample must fit well inside the
100 ms period for the time series to be regular.

    sudo .venv/bin/python bench/congestion_telemetry.py [--samples N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controller.pfc_agent import p4switch_watchdog  # noqa: E402
from experiments.framework.telemetry import TelemetrySampler  # noqa: E402
from experiments.incast.lab import CongestionLab, incast_fabric  # noqa: E402


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=200)
    args = p.parse_args()
    spec, roles = incast_fabric(3, prefix="cb", grpc_base=14400, thrift_base=14450)
    with CongestionLab(spec, host_pps=250, fabric_pps=1000) as lab:
        queues = roles.watched()
        sampler = TelemetrySampler(lab.channels, queues)
        dog = p4switch_watchdog(lab.channels, queues)
        for name, fn in (("telemetry sample", sampler.sample), ("watchdog poll", dog.poll)):
            fn()  # connect
            ms = sorted(timed(fn, args.samples))
            print(f"{name:<17} {len(queues)} queues: median {statistics.median(ms):.2f} ms, "
                  f"p95 {ms[int(0.95 * len(ms))]:.2f} ms, max {ms[-1]:.2f} ms")


if __name__ == "__main__":
    main()
