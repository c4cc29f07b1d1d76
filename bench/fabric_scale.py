"""How large a fabric comes up on this machine: bring-up, pingall and an all-to-all per scale.

    sudo .venv/bin/python bench/fabric_scale.py FABRIC [--at K=V,K=V ...] \
        [--target p4switch|bmv2] [--size 256K] [--mtu 1024] [--staged]

Per scale (one `--at` each, in order; the fabric's default scale without one): the network
with its switch processes, controller connect, pipeline + routes (each timed), then every NIC
pings every other, then an all-to-all over every NIC run by the collective runtime (`jobs.ccl`:
one engine per NIC, each NIC its own server so every flow crosses the fabric, each at its link
rate; `--staged`: n-1 pairwise steps, rank r sending to r+k in step k, each step run on its
own and the times summed). Prints one row per scale: switches, NICs, bring-up seconds,
pingall loss, all-to-all time (nccl-tests' time of the run), whether every rank completed, and
the aggregate goodput (all-to-all payload bytes over the fabric x 8 / collective time). Stops
at the first scale that fails.
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
from jobs.ccl import native
from jobs.ccl.communicator import Communicator, Transport, members
from jobs.ccl.datatypes import datatype
from jobs.ccl.plan import Compiled, compile_collective
from jobs.ccl.schedule import FABRIC, Flow, Schedule, Step
from jobs.gpus import nic_gpus
from mechanisms import program_path
from targets import get_target
from topos import FABRICS, build_fabric
from topos.builders import parse_scale
from topos.mininet import FabricNetwork
from traffic.hosts import MininetHost

PROGRAM = program_path("ecmp")
BYTE = datatype("uint8")  # sizes to the byte


def size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def say(line: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def staged_steps(n: int, size: int) -> list[Schedule]:
    """The pairwise all-to-all as n-1 one-step schedules: rank r sends its chunk for r+k
    (alltoall's chunk r*n + d) in step k."""
    chunk = -(-size // n)
    return [Schedule("alltoall_staged", n, size,
                     [Step([Flow(r, (r + k) % n, chunk, FABRIC, (r * n + (r + k) % n,))
                            for r in range(n)], f"shift {k}")], (n - 1) / n)
            for k in range(1, n)]


def fabric_bytes(compiled: Compiled) -> int:
    """Payload bytes the plan sends over the fabric."""
    return sum(b for (_, transport, _), b in compiled.sent_bytes().items()
               if transport == native.FABRIC)


def all_to_all(comm: Communicator, a2a_bytes: int, staged: bool) -> dict:
    """One all-to-all of `a2a_bytes` per rank (one run, or one run per staged step)."""
    ranks = members(comm)
    schedules: list[Schedule | None] = [*staged_steps(len(ranks), a2a_bytes)] if staged \
        else [None]  # None: the runtime's flat alltoall, one step
    out = {"a2a_bytes": 0, "a2a_s": 0.0, "a2a_complete": True, "a2a_lost": 0}
    for schedule in schedules:
        compiled = compile_collective("alltoall", "flat", ranks, total_ranks=len(ranks),
                                      count=a2a_bytes, dtype=BYTE, schedule=schedule)
        loaded = comm.load(compiled)
        try:
            result = comm.run(loaded)
        finally:
            comm.unload(loaded)
        out["a2a_bytes"] += fabric_bytes(compiled)
        out["a2a_s"] += result.time_s
        out["a2a_complete"] = out["a2a_complete"] and result.complete
        out["a2a_lost"] += result.total("retransmits")
        if not result.complete:
            break  # the communicator is unusable after an incomplete run
    return out


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
        rate_mbps = min(ln.rate_mbps for ln in spec.links if ln.rate_mbps) \
            if any(ln.rate_mbps for ln in spec.links) else 1000.0
        rate_bps = rate_mbps * 1e6
        gpus = nic_gpus(spec)
        with Communicator([MininetHost(net.host(g.nic)) for g in gpus], gpus, spec,
                          nvlink_bps=rate_bps,  # unused: no two NICs share a server
                          default_port_bps=rate_bps,
                          transport=Transport(mtu=mtu).scaled(rate_bps)) as comm:
            row.update(all_to_all(comm, a2a_bytes, staged))
        row["goodput_mbps"] = row["a2a_bytes"] * 8 / row["a2a_s"] / 1e6 \
            if row["a2a_s"] > 0 else 0.0
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
