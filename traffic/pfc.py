"""IEEE 802.1Qbb priority flow control: pause frames and the sender's per-priority pause state.

A pause frame stops a priority for quanta x 512 bit times at the link rate; quanta 0 resumes
(XON). The timing is computed here rather than with scapy's `get_pause_time()`, which is off by
2x at 1 Gb/s.
"""

from __future__ import annotations

import argparse
import select
import struct
import sys
import time
from typing import Any

from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.l2 import Ether

from mechanisms.pfc import ETHERTYPE_MAC_CONTROL, PFC_DST_MAC, PFC_OPCODE, pause_seconds
from traffic import bpf, netutil
from traffic.wire import ETH_LEN, ETH_TYPE_AT, PFC_ENABLE_AT, PFC_LEN, PFC_OPCODE_AT, PFC_TIMES_AT

MIN_FRAME = 60


def build_pause(src_mac: str, quanta: dict[int, int]) -> bytes:
    """A PFC frame pausing each priority in `quanta` (priority -> quanta; 0 = resume)."""
    fields: dict[str, Any] = {}
    for prio, q in quanta.items():
        if not 0 <= prio <= 7:
            raise ValueError(f"PFC priority must be 0..7, got {prio}")
        if not 0 <= q <= 0xFFFF:
            raise ValueError(f"PFC quanta must be 0..65535, got {q}")
        fields[f"c{prio}_enabled"] = 1
        fields[f"c{prio}_pause_time"] = q
    frame = bytes(Ether(src=src_mac, dst=PFC_DST_MAC) / MACControlClassBasedFlowControl(**fields))
    return frame.ljust(MIN_FRAME, b"\x00")


def parse_pause(frame: bytes | bytearray | memoryview) -> dict[int, int] | None:
    """Priority -> quanta of a PFC frame, or None if the frame is not PFC."""
    if len(frame) < ETH_LEN + PFC_LEN:
        return None
    (ethertype,) = struct.unpack_from("!H", frame, ETH_TYPE_AT)
    (opcode,) = struct.unpack_from("!H", frame, PFC_OPCODE_AT)
    if ethertype != ETHERTYPE_MAC_CONTROL or opcode != PFC_OPCODE:
        return None
    enable = frame[PFC_ENABLE_AT]
    times = struct.unpack_from("!8H", frame, PFC_TIMES_AT)
    return {prio: times[prio] for prio in range(8) if enable & (1 << prio)}


class PauseState:
    """When each priority may send again, driven by received pause frames."""

    def __init__(self, link_bps: float) -> None:
        if link_bps <= 0:
            raise ValueError(f"link rate must be > 0 b/s, got {link_bps}")
        self.link_bps = link_bps
        self._until = [0.0] * 8
        self.frames = 0
        self.paused_s = [0.0] * 8  # time granted by pause frames, per priority (XON shortens it)

    def on_frame(self, frame: bytes | bytearray | memoryview, now: float) -> bool:
        """Apply a received frame; True if it was a PFC frame."""
        quanta = parse_pause(frame)
        if quanta is None:
            return False
        self.frames += 1
        for prio, q in quanta.items():
            previous = self._until[prio]
            if previous > now:  # the new frame replaces the remaining pause
                self.paused_s[prio] -= previous - now
            self._until[prio] = now + pause_seconds(q, self.link_bps)
            self.paused_s[prio] += self._until[prio] - now
        return True

    def resume_at(self, prio: int) -> float:
        return self._until[prio]

    def is_paused(self, prio: int, now: float) -> bool:
        return self._until[prio] > now


def send_pause(iface: str, quanta: dict[int, int], src_mac: str | None = None) -> None:
    """Transmit one PFC frame on `iface` (as a switch port or a host agent would)."""
    with netutil.packet_socket(iface) as s:
        s.send(build_pause(src_mac or netutil.interface_mac(iface), quanta))


def main(argv: list[str] | None = None) -> int:
    """python -m traffic.pfc --iface IF --pause 3:65535 [--wait-for-data] [--xon-after S]"""
    p = argparse.ArgumentParser(prog="python -m traffic.pfc",
                                description="Send PFC pause frames on an interface.")
    p.add_argument("--iface", required=True)
    p.add_argument("--pause", required=True, help="priority:quanta[,priority:quanta...]")
    p.add_argument("--wait-for-data", action="store_true",
                   help="send once the first RoCE data frame arrives on the interface")
    p.add_argument("--xon-after", type=float, default=None,
                   help="seconds after the pause to send quanta 0 (resume) for those priorities")
    args = p.parse_args(argv)
    try:
        quanta = {int(k): int(v) for k, v in (x.split(":") for x in args.pause.split(","))}
        netutil.require_interface(args.iface)
    except (ValueError, netutil.NetError) as e:
        print(f"pfc: {e}", file=sys.stderr)
        return 2
    if args.wait_for_data:
        with netutil.packet_socket(args.iface, netutil.ETH_P_ALL) as rx:
            bpf.attach(rx, bpf.roce_receiver_filter())
            print("waiting", flush=True)
            select.select([rx], [], [])
    send_pause(args.iface, quanta)
    sent = time.monotonic()
    print("paused", flush=True)
    if args.xon_after is not None:
        time.sleep(max(0.0, sent + args.xon_after - time.monotonic()))  # the resume moment
        send_pause(args.iface, {prio: 0 for prio in quanta})
        print("resumed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
