"""How large a fabric comes up on this machine: bring-up, pingall and an all-to-all per scale.

    sudo .venv/bin/python bench/fabric_scale.py FABRIC [--at K=V,K=V ...] \
        [--target p4switch|bmv2] [--size 256K] [--mtu 1024] [--staged]

Per scale (one `--at` each, in order; the fabric's default scale without one): the network
with its switch processes, controller connect, pipeline + routes (each timed), then every NIC
pings every other, then an all-to-all collective over every NIC (`traffic.collectives`, one
RDMA WRITE message per flow, each NIC at its link rate; `--staged`: n-1 pairwise steps).
Prints one row per scale: switches, NICs, bring-up seconds, pingall loss, all-to-all time,
whether every flow completed, and the aggregate goodput (all-to-all payload bytes x 8 /
collective time). Stops at the first scale that fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.checks import pingall
from controller.fabric import FabricController
from controller.pipeline import build_pipeline
from mechanisms import program_path
from targets import get_target
from topos import FABRICS, build_fabric
from topos.builders import parse_scale
from topos.mininet import FabricNetwork
from traffic.collectives.runner import CollectiveRunner
from traffic.collectives.schedule import all_to_all
from traffic.hosts import MininetHost

PROGRAM = program_path("ecmp")


def size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def say(line: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def one_scale(fabric: str, scale: dict, target_name: str, a2a_bytes: int, mtu: int,
              staged: bool) -> dict:
    spec = build_fabric(fabric, **scale)
    target = get_target(target_name).ensure_available()
    row: dict = {"scale": ",".join(f"{k}={v}" for k, v in scale.items()) or "default",
                 "switches": len(spec.switches), "nics": len(spec.host_nics())}
    started = time.monotonic()
    pipeline = build_pipeline(PROGRAM, target)
    net = FabricNetwork(spec, target)
    ctl = FabricController(spec, pipeline)
    try:
        net.start()
        row["ready"] = time.monotonic() - started
        ctl.connect()
        ctl.program()
        row["up"] = time.monotonic() - started
        ctl.close()
        say(f"{row['scale']}: up and routed in {row['up']:.2f} s")

        def popen(nic: str, argv: list[str]) -> subprocess.Popen:
            return net.host(nic).popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        t0 = time.monotonic()
        ping = pingall(spec, popen)
        row["ping_s"] = time.monotonic() - t0
        row["pings"], row["lost"] = ping.sent, len(ping.lost)
        say(f"{row['scale']}: {ping} ({row['ping_s']:.1f} s)")
        nics = spec.host_nics()
        rate_mbps = min(ln.rate_mbps for ln in spec.links if ln.rate_mbps) \
            if any(ln.rate_mbps for ln in spec.links) else 1000.0
        schedule = all_to_all(len(nics), a2a_bytes, staged=staged)
        with CollectiveRunner([MininetHost(net.host(n.name)) for n in nics], rate_mbps * 1e6,
                              mtu_payload=mtu, sender={"dcqcn": False}) as runner:
            result = runner.run(schedule)
        row["a2a_bytes"] = schedule.total_bytes()
        row["a2a_s"] = result.total_s
        row["a2a_complete"] = result.complete
        row["a2a_lost"] = sum(s.lost_packets for s in result.steps)
        row["goodput_mbps"] = schedule.total_bytes() * 8 / result.total_s / 1e6 \
            if result.total_s > 0 else 0.0
        row["nic_mbps"] = rate_mbps
    finally:
        ctl.close()
        net.stop()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fabric", choices=sorted(FABRICS))
    parser.add_argument("--at", action="append", default=[], metavar="K=V,K=V",
                        help="a scale to try (repeat, smallest first)")
    parser.add_argument("--target", default="p4switch")
    parser.add_argument("--size", type=size, default=size("256K"),
                        help="all-to-all data per rank (256K)")
    parser.add_argument("--mtu", type=int, default=1024, help="payload bytes per packet")
    parser.add_argument("--staged", action="store_true",
                        help="pairwise all-to-all: n-1 steps, rank r sends to r+k in step k "
                             "(default: one step with all n(n-1) flows)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("fabric_scale: needs root (Mininet)", file=sys.stderr)
        return 2
    scales = [parse_scale(at.split(",")) for at in args.at] or [{}]
    print(f"{'scale':<34}{'sw':>4}{'NICs':>5}{'ready':>8}{'UP':>7}{'pingall':>14}"
          f"{'a2a MB':>8}{'a2a s':>7}{'done':>6}{'goodput':>14}", flush=True)
    for scale in scales:
        try:
            r = one_scale(args.fabric, scale, args.target, args.size, args.mtu, args.staged)
        except Exception as err:  # the first scale that does not come up ends the search
            label = ",".join(f"{k}={v}" for k, v in scale.items())
            print(f"{label:<34} failed: {type(err).__name__}: {err}", flush=True)
            return 1
        print(f"{r['scale']:<34}{r['switches']:>4}{r['nics']:>5}{r['ready']:>7.2f}s"
              f"{r['up']:>6.2f}s{r['pings'] - r['lost']:>7}/{r['pings']:<6}"
              f"{r['a2a_bytes'] / 1e6:>8.2f}{r['a2a_s']:>6.2f}s{'yes' if r['a2a_complete'] else 'no':>6}"
              f"{r['goodput_mbps']:>8.1f} Mb/s  (NIC links {r['nic_mbps']:g} Mb/s, "
              f"{r['a2a_lost']} lost pkts)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
