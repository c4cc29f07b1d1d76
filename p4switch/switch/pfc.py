"""PFC (IEEE 802.1Qbb) reception at the port, as a switch MAC does (p4switch-only).

A received PFC frame (dst 01:80:c2:00:00:01, type 0x8808, opcode 0x0101) pauses, for each
enabled class i, the traffic manager's egress queue (receiving port, priority i) for
quanta x 512 bit times at the port's link rate; quanta 0 resumes it (XON). The frame then
continues into the pipeline like any other (the lab's programs count and drop it). Classes at
or above the number of priority queues are ignored. BMv2 does not do this.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

PFC_DST = bytes.fromhex("0180c2000001")
PFC_TYPE_OPCODE = b"\x88\x08\x01\x01"  # MAC control ethertype, class-based flow control
_BODY = struct.Struct("!H8H")


def parse_pfc(frame: bytes) -> list[tuple[int, int]] | None:
    """[(class, quanta)] for the enabled classes of a PFC frame; None if it is not one."""
    if frame[12:16] != PFC_TYPE_OPCODE or frame[:6] != PFC_DST or len(frame) < 16 + _BODY.size:
        return None
    enabled, *times = _BODY.unpack_from(frame, 16)
    return [(i, times[i]) for i in range(8) if enabled >> i & 1]


class PfcReceiver:
    """Applies received PFC frames to the traffic manager's queues."""

    def __init__(self, pause: Callable[[int, int, float], None], priority_queues: int,
                 link_bps: Callable[[int], float]):
        """`pause(port, priority, seconds)`; `link_bps(port)` gives the rate quanta refer to."""
        self.pause = pause
        self.priority_queues = priority_queues
        self.link_bps = link_bps
        self.frames = 0

    def handle(self, port: int, frame: bytes) -> bool:
        """Apply `frame` if it is a PFC frame received on `port`; True if it was one."""
        classes = parse_pfc(frame)
        if classes is None:
            return False
        self.frames += 1
        bps = self.link_bps(port)
        for prio, quanta in classes:
            if prio < self.priority_queues:
                self.pause(port, prio, quanta * 512 / bps)
        return True


def sysfs_link_bps(iface: str, default_mbps: float = 10_000) -> float:
    """The interface's speed from sysfs in bit/s (veth reports 10 Gb/s; unknown -> default)."""
    try:
        with open(f"/sys/class/net/{iface}/speed") as f:
            mbps = int(f.read().strip())
    except (OSError, ValueError):
        mbps = -1
    return (mbps if mbps > 0 else default_mbps) * 1e6
