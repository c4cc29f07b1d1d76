"""Packets per second of each load-balancing program in the p4switch engine (one core).

ECMP, flowlet switching and DLB (packets from a host port, so every one is tagged) with one
4-member ECMP group and RoCEv2 frames of 16 flows in turn: what the per-flow registers, the
flowlet id mixing and the tag insertion cost against plain ECMP. By process CPU time.

    .venv/bin/python bench/lb_engine_pps.py [--packets N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments.framework.engine_switch import MODES, LbSwitch, roce_frame


def pps(mode: str, packets: int) -> float:
    switch = LbSwitch(mode, [1, 2, 3, 4], seed=0x1234, host_ports=[9],
                      flowlet_gap_us=100 if mode == "flowlet" else None)
    frames = [roce_frame(50000 + i, payload=1024) for i in range(16)]
    for frame in frames:  # warm up
        switch.forward(frame, 9)
    started = time.process_time()
    for i in range(packets):
        switch.now_us += 50  # every other packet of a flow starts a flowlet
        switch.forward(frames[i % 16], 9)
    return packets / (time.process_time() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=20000)
    args = parser.parse_args()
    base = None
    for mode in MODES:
        rate = pps(mode, args.packets)
        base = base or rate
        print(f"{mode:8s} {rate:9.0f} pps (1-KB RoCEv2 frames, CPU time)  "
              f"{rate / base:5.2f} x ecmp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
