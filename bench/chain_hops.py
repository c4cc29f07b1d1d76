#!/usr/bin/env python3
"""Benchmark: what one packet-hop costs a software switch at fabric rates, without Mininet.

`make bench-switch` floods one switch, so every wake-up finds dozens of frames; in a fabric a
switch wakes for one or a few, and the cost per hop is four to nine times higher
(docs/packet-hop.md). This harness isolates that case: K switches in a line (h1 - s1 - ... - sK -
h2, veth pairs, the switches in the root namespace, each routing 10.0.2.0/24 from port 1 to
port 2 through a one-member ECMP group) and one paced flow from h1 to h2. It reports, per
packet-hop: the switches' CPU (utime + stime from /proc), their context switches (voluntary:
woken with work; involuntary: preempted), and the loss.

    sudo .venv/bin/python bench/chain_hops.py [--switches 4] [--rates 1000,4000]
        [--size 1000] [--mtu 4200] [--seconds 4] [--program ecmp]
        [--target p4switch|bmv2|c-forward]
        [--htb MBPS]
        [--per-process K] [--pipeline native|python|c]

`--target c-forward` puts in each switch's place a forwarder written in C on the C data
plane's ring loop (p4switch/cdp/forward.py: port 1 to port 2 and back, no P4 program): the
floor of what a switch in C costs per hop here, with the same rings, wake-ups and kernel path.

`--per-process K` runs K consecutive switches of the line in one p4switch process
(`p4switch ARGS :: ARGS`, one loop for their data planes). `--htb` shapes the links between
switches as the fabrics do (topos/mininet/shaping.py: an HTB class of that rate and a pfifo), so
the qdisc's share of a hop can be measured.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from proc_accounting import ctx_switches  # noqa: E402
from switch_pps import (  # noqa: E402
    cpu_seconds,
    native_missing,
    program_route,
    start_forwarder,
    start_switches,
    stop,
)
from switch_pps_io import Bench, drain, run_traffic, sh  # noqa: E402


def chain_links(bench: Bench, switches: int, htb_mbps: float | None) -> list[dict[int, str]]:
    """Veth pairs between consecutive switches (added to `bench.links` for the clean-up);
    each switch's ports {1: in, 2: out}."""
    first, last = bench.setup()
    ports = [{1: first} for _ in range(switches)]
    for i in range(switches - 1):
        a, b = f"{bench.tag}c{i}a", f"{bench.tag}c{i}b"
        bench.veth(a, b)
        for end in (a, b):
            sh("sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1")
            sh("ip", "link", "set", end, "up")
            if htb_mbps is not None:
                from topos.mininet.shaping import run_tc_batch, tc_batch
                from topos.model import Endpoint, Link

                link = Link(Endpoint("x", 1, end), Endpoint("y", 1, end), rate_mbps=htb_mbps,
                            queue_pkts=1000)
                run_tc_batch(tc_batch(end, link, netem=False))
        ports[i][2], ports[i + 1][1] = a, b
    ports[-1][2] = last
    return ports


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--switches", type=int, default=4)
    p.add_argument("--rates", default="1000,4000", help="packets/s of the flow, one run each")
    p.add_argument("--size", type=int, default=1000, help="frame bytes")
    p.add_argument("--mtu", type=int, default=None,
                   help="MTU of every veth (default the kernel's 1500; 4200 for --size 4138)")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--program", default="ecmp")
    p.add_argument("--pipeline", default="native", choices=("native", "python", "c"),
                   help="p4switch's pipeline (the native one is built first)")
    p.add_argument("--target", default="p4switch", choices=("p4switch", "bmv2", "c-forward"))
    p.add_argument("--per-process", type=int, default=1, metavar="K",
                   help="switches served by one p4switch process (default 1)")
    p.add_argument("--htb", type=float, default=None, metavar="MBPS",
                   help="shape the links between switches with HTB at this rate")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("chain_hops: needs root (namespaces, raw sockets)", file=sys.stderr)
        return 1
    if args.switches < 1:
        p.error("--switches must be 1 or more")
    if args.per_process < 1 or (args.per_process > 1 and args.target != "p4switch"):
        p.error("--per-process must be 1 or more, and only p4switch serves several switches")
    from controller.pipeline import build_pipeline
    from mechanisms import program_path

    forwarder = args.target == "c-forward"
    pipeline = None if forwarder else build_pipeline(program_path(args.program), args.target)
    options: tuple[str, ...] = ()
    if args.target == "p4switch":
        if args.pipeline == "native" and native_missing(args.program):
            return 1
        options = ("--pipeline", args.pipeline)
    bench = Bench(args.mtu)
    procs = []
    shaped = f"HTB {args.htb:g} Mb/s" if args.htb else "unshaped"
    per = f"{args.per_process} per process" if args.per_process > 1 else "one process each"
    pipe = f" ({args.pipeline} pipeline)" if args.target == "p4switch" else ""
    program = "no P4 program" if forwarder else f"{args.program}.p4"
    print(f"{args.target}{pipe}, {program}, {args.switches} switches in a line ({per}), "
          f"{args.size} B frames, links between switches {shaped}; "
          f"load average {os.getloadavg()[0]:.2f} at start")
    try:
        chain = chain_links(bench, args.switches, args.htb)
        with tempfile.TemporaryDirectory() as tmp:
            for first in range(0, len(chain), args.per_process):
                group = chain[first:first + args.per_process]
                if forwarder:
                    procs.append(start_forwarder(group[0], Path(tmp) / f"s{first}.log"))
                    continue
                proc, addrs, _ = start_switches(args.target, group, Path(tmp) / f"s{first}.log",
                                                options)
                procs.append(proc)
                for addr in addrs:
                    program_route(addr, pipeline)
            h1, h2 = bench.ns
            print(f"{'pps':>7} {'sent':>7} {'lost':>6} {'CPU µs/hop':>11} "
                  f"{'woken/hop':>10} {'preempted/hop':>14}")
            for rate in map(int, args.rates.split(",")):
                drain(h2)
                cpu0 = sum(cpu_seconds(q.pid) for q in procs)
                cs0 = [ctx_switches(q.pid) for q in procs]
                sent, _, got, *_ = run_traffic(h1, h2, rate, args.seconds, args.size)
                cpu = sum(cpu_seconds(q.pid) for q in procs) - cpu0
                cs1 = [ctx_switches(q.pid) for q in procs]
                vol = sum(b[0] - a[0] for a, b in zip(cs0, cs1, strict=True))
                invol = sum(b[1] - a[1] for a, b in zip(cs0, cs1, strict=True))
                hops = max(1, got * args.switches)
                print(f"{rate:>7} {sent:>7} {sent - got:>6} {cpu / hops * 1e6:>11.1f} "
                      f"{vol / hops:>10.2f} {invol / hops:>14.2f}", flush=True)
    finally:
        for proc in procs:
            stop(proc)
        bench.cleanup()
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
