"""Sender packet rate: one unpaced sender process on a veth link (target >= 50,000 pps).

    .venv/bin/python bench/traffic_sender_pps.py [--packets 200000]
Needs root (namespaces). Prints pps for full-size (1024 B payload) and small (64 B) packets,
one QP and eight QPs, and for tagged frames; then the pacing accuracy at three rates. Nothing
answers on the far side, so go-back-N is off (each PSN sent once, no waiting for ACKs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from traffic import netns
from traffic.agent import Agent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--packets", type=int, default=200_000)
    args = p.parse_args()
    cases = [("1024 B payload, 1 QP", 1024, 1, False), ("64 B payload, 1 QP", 64, 1, False),
             ("1024 B payload, 8 QPs", 1024, 8, False), ("1024 B payload, tagged", 1024, 1, True)]
    with netns.pair("trbs") as tb:
        a, b = tb.hosts["a"], tb.hosts["b"]
        with Agent(a) as tx:
            for name, mtu, nqp, tag in cases:
                per_qp = args.packets // nqp
                msg = 64 * mtu
                qps = [{"dst_ip": b.ip, "dst_mac": b.mac, "qpn": 1 + i, "rate_bps": 0,
                        "message_bytes": msg, "messages": max(1, per_qp // 64), "tag": tag}
                       for i in range(nqp)]
                tx.start_send({"iface": a.iface, "qps": qps, "mtu_payload": mtu,
                               "dcqcn": False, "ack_wait_s": 0.0, "go_back_n": False})
                res = tx.result(300)
                print(f"sender {name:26s}: {res['packets']:7d} packets in "
                      f"{res['elapsed_s']:.2f} s = {res['pps']:9.0f} pps "
                      f"({res['packets'] * (mtu + 58) * 8 / res['elapsed_s'] / 1e6:.0f} Mb/s)")
            for pps in (1_000, 10_000, 30_000):  # pacing accuracy: achieved / target rate
                rate = pps * (1024 + 58) * 8
                tx.start_send({"iface": a.iface, "dcqcn": False, "ack_wait_s": 0.0,
                               "go_back_n": False,
                               "qps": [{"dst_ip": b.ip, "dst_mac": b.mac, "qpn": 99,
                                        "rate_bps": rate, "message_bytes": 64 * 1024,
                                        "messages": max(1, pps // 64)}]})
                q = tx.result(300)["qps"][0]
                achieved = q["frame_bytes"] * 8 / (q["end"] - q["start"])
                print(f"paced at {rate / 1e6:6.1f} Mb/s ({pps} pps): achieved "
                      f"{achieved / 1e6:6.2f} Mb/s = {achieved / rate:.3f} of the target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
