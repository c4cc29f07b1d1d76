"""Baseline reordering of a plain veth link (no switch), to judge DLB results against.

    .venv/bin/python bench/traffic_baseline_reorder.py [--seconds 2]
Needs root (namespaces). Four QPs (distinct UDP source ports) cross one veth pair under
several egress qdiscs; the receiver counts out-of-order arrivals per QP (PSN below the highest
seen). Any reordering printed here is the host stack's own, not a load balancer's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from traffic import netns
from traffic.agent import Agent

QDISCS = {
    "noqueue (veth default)": [],
    "pfifo limit 1000": ["root", "pfifo", "limit", "1000"],
    "htb 50Mbit (TCLink-style shaping)": ["root", "handle", "1:", "htb", "default", "1"],
}


def set_qdisc(host, name: str) -> None:
    subprocess.run(["ip", "netns", "exec", host.netns, "tc", "qdisc", "del", "dev", host.iface,
                    "root"], capture_output=True)
    args = QDISCS[name]
    if not args:
        return
    tc = ["ip", "netns", "exec", host.netns, "tc"]
    subprocess.run([*tc, "qdisc", "add", "dev", host.iface, *args], check=True)
    if "htb" in args:
        subprocess.run([*tc, "class", "add", "dev", host.iface, "parent", "1:", "classid", "1:1",
                        "htb", "rate", "50mbit", "burst", "15k", "quantum", "1514"], check=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=2.0)
    args = p.parse_args()
    with netns.pair("trbo") as tb:
        a, b = tb.hosts["a"], tb.hosts["b"]
        with Agent(b) as rx, Agent(a) as tx:
            for qdisc in QDISCS:
                set_qdisc(a, qdisc)
                for label, rate in (("paced 4 x 10 Mb/s", 10e6), ("unpaced", 0.0)):
                    # paced: `seconds` of traffic per QP; unpaced: 40,000 packets in all
                    msgs = int(rate * args.seconds / 8 / 65536) if rate else 40_000 // 4 // 64
                    qps = [{"dst_ip": b.ip, "dst_mac": b.mac, "qpn": 10 + i, "rate_bps": rate,
                            "message_bytes": 65536, "messages": max(1, msgs)} for i in range(4)]
                    rx.start_recv({"iface": b.iface, "idle_timeout_s": 0.5,
                                   "duration_s": args.seconds + 30})
                    tx.start_send({"iface": a.iface, "qps": qps, "dcqcn": False})
                    tx.result(300)
                    got = rx.result(300)
                    pk = sum(q["packets"] for q in got["qps"])
                    ooo = sum(q["out_of_order"] for q in got["qps"])
                    lost = sum(q["lost"] for q in got["qps"])
                    dist = max((q["reorder_distance_max"] for q in got["qps"]), default=0)
                    print(f"baseline {qdisc:34s} {label:18s}: {pk:7d} packets, "
                          f"out of order {ooo} ({ooo / max(pk, 1):.4%}), max distance {dist}, "
                          f"lost {lost}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
