"""Receiver packet rate: how many RoCE packets per second one receiver process handles.

    .venv/bin/python bench/traffic_receiver_pps.py [--seconds 2]
Needs root (namespaces). A paced sender offers increasing packet rates over a veth link; for
each the receiver's processed rate and its loss are printed (ICRC verification, PSN tracking,
reorder buffer and 10 ms bins all on), then an unpaced run shows the saturated rate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from traffic import netns
from traffic.agent import Agent

MTU = 1024
FRAME = MTU + 58  # Ether + IPv4 + UDP + BTH + ICRC


def run(tx: Agent, rx: Agent, a, b, pps: float | None, seconds: float) -> None:
    packets = int((pps or 200_000) * seconds)
    rx.start_recv({"iface": b.iface, "idle_timeout_s": 0.5, "duration_s": seconds + 30})
    tx.start_send({"iface": a.iface, "dcqcn": False, "ack_wait_s": 0.0, "mtu_payload": MTU,
                   "qps": [{"dst_ip": b.ip, "dst_mac": b.mac, "qpn": 7,
                            "rate_bps": pps * FRAME * 8 if pps else 0,
                            "message_bytes": 64 * MTU, "messages": max(1, packets // 64)}]})
    sent = tx.result(300)
    got = rx.result(300)
    q = got["qps"][0] if got["qps"] else {"packets": 0, "first_t": 0, "last_t": 0, "lost": 0}
    span = q["last_t"] - q["first_t"]
    rate = q["packets"] / span if span > 0 else 0
    offered = f"{pps:8.0f}" if pps else "unpaced "
    loss = 1 - q["packets"] / sent["packets"] if sent["packets"] else 0
    print(f"receiver offered {offered} pps (sent at {sent['pps']:8.0f}): processed "
          f"{rate:8.0f} pps, {q['packets']} of {sent['packets']} packets, loss {loss:.2%} "
          f"(socket overflow {got['socket_drops']})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=2.0)
    args = p.parse_args()
    with netns.pair("trbr") as tb:
        a, b = tb.hosts["a"], tb.hosts["b"]
        with Agent(b) as rx, Agent(a) as tx:
            for pps in (10_000, 25_000, 50_000, 75_000, 100_000, None):
                run(tx, rx, a, b, pps, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
