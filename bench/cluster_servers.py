"""Bring-up time and TCP goodput of a fabric on one server against the same fabric split over two.

    sudo .venv/bin/python bench/cluster_servers.py \
        [--target p4switch|bmv2] [--seconds 8] [--rate 10] [FABRIC ...]

The second server is this machine reached over ssh on 127.0.0.2 (an sshd started for the run,
as in tests/cluster), so the numbers show the cost of the ssh machinery and the tunnels, not of
a real network between machines. Per fabric and placement: time to Mininet + switches ready,
controller connected, pipeline + routes; then iperf (TCP) goodput from the first NIC to the
last one, whose path crosses the servers in the split case, with every link at --rate Mb/s.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.fabric import FabricController
from controller.pipeline import build_pipeline
from mechanisms import program_path
from targets import get_target
from tests.cluster.sshd import available, second_server
from topos import build_fabric
from topos.mininet import FabricNetwork
from topos.mininet.cluster import ClusterNetwork, ClusterOptions
from topos.relocate import prefixed

PROGRAM = program_path("ecmp")
SCALES = {"leafspine": {}, "aipod": {}}


def goodput_bps(net, src: str, dst: str, seconds: float) -> float:
    server = net.host(dst).popen(["iperf", "-s", "-p", "5201"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    try:
        ip = net.spec.nic(dst).ip
        deadline = time.monotonic() + 10
        while True:  # the client retries until the server listens (its readiness)
            done = net.host(src).popen(["iperf", "-c", ip, "-p", "5201", "-t", str(seconds),
                                        "-y", "C"], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
            out, err = done.communicate(timeout=seconds + 30)
            if out.strip():
                return float(out.strip().splitlines()[-1].split(",")[-1])
            if time.monotonic() > deadline:
                raise RuntimeError(f"iperf {src} -> {dst} failed: {err.strip()}")
    finally:
        server.terminate()
        server.wait()


def measure(spec, target, options: ClusterOptions | None, seconds: float) -> dict[str, float]:
    pipeline = build_pipeline(PROGRAM, target)
    started = time.monotonic()
    net = (ClusterNetwork(spec, target, cluster=options) if options
           else FabricNetwork(spec, target))
    row: dict[str, float] = {}
    try:
        net.start()
        row["network_s"] = time.monotonic() - started
        ctl = FabricController(spec, pipeline)
        try:
            t = time.monotonic()
            ctl.connect()
            row["connect_s"] = time.monotonic() - t
            t = time.monotonic()
            ctl.program()
            row["program_s"] = time.monotonic() - t
            row["bringup_s"] = time.monotonic() - started
        finally:
            ctl.close()
        nics = spec.host_nics()
        row["goodput_mbps"] = goodput_bps(net, nics[0].name, nics[-1].name, seconds) / 1e6
        if options:
            row["crossing"] = len(net.placement.crossing(spec))
    finally:
        t = time.monotonic()
        net.stop()
        row["teardown_s"] = time.monotonic() - t
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fabrics", nargs="*", default=list(SCALES))
    parser.add_argument("--target", default="p4switch", choices=("p4switch", "bmv2"))
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rate", type=float, default=10.0, help="link rate in Mb/s")
    args = parser.parse_args()
    reason = available()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    target = get_target(args.target).ensure_available()
    print(f"{'fabric':<10}{'servers':>8}{'tunnels':>8}{'network s':>11}{'connect s':>11}"
          f"{'program s':>11}{'bring-up s':>12}{'goodput Mb/s':>14}{'teardown s':>12}")
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fl-bench-")))
        server2 = stack.enter_context(second_server(work / "sshd"))
        for fabric in args.fabrics:
            spec = prefixed(build_fabric(fabric, **SCALES.get(fabric, {}),
                                         rate_mbps=args.rate), "cs", 14200, 14300)
            for options in (None, ClusterOptions(["localhost", server2.address],
                                                 ssh_config=server2.ssh_config)):
                row = measure(spec, target, options, args.seconds)
                servers = 2 if options else 1
                print(f"{fabric:<10}{servers:>8}{int(row.get('crossing', 0)):>8}"
                      f"{row['network_s']:>11.2f}{row['connect_s']:>11.2f}"
                      f"{row['program_s']:>11.2f}{row['bringup_s']:>12.2f}"
                      f"{row['goodput_mbps']:>14.2f}{row['teardown_s']:>12.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
