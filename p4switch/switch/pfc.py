"""PFC (IEEE 802.1Qbb) reception at the port, as a switch MAC does (p4switch-only).

Reception: a received PFC frame (dst 01:80:c2:00:00:01, type 0x8808, opcode 0x0101) pauses, for each
enabled class i, the traffic manager's egress queue (receiving port, priority i) for
quanta x 512 bit times at the port's link rate; quanta 0 resumes it (XON). The frame then
continues into the pipeline like any other (the lab's programs count and drop it), unless every
queue it pauses is one the PFC watchdog holds stuck (p4switch/switch/pfc_watchdog.py): those
ignore pauses, and the frame stops at the port (`PfcReceiver.ignored`), so the program's relay
of pauses to upstream ports (p4src/include/pfc.p4) cannot keep a broken cycle paused. Classes
at or above the number of priority queues are ignored. BMv2 does not do this.

Holding a pause (`PauseHold`; runtime CLI `pfc_hold <packets>` | `pfc_hold off`): a switch MAC
keeps a port in XOFF for as long as its buffer holds that port's traffic above the threshold,
refreshing the pause on a timer. The lab's P4 program refreshes pauses on packet events only
(p4src/include/pfc.p4), so a cycle in which no packet moves lets its pauses run out. With the
hold on, every pause the switch sends out of port U for class c is sent again every quarter of
its pause time (a switch process kept off the CPU for a while must not let it lapse) while a
class-c egress queue that holds a packet from U is deeper than `packets` (the program's XOFF
state is per (upstream, congested queue) pair, cleared at XON); an XON sent on U for c ends
it, and so does that queue draining (the last pause then runs out).
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

    def __init__(self, pause: Callable[[int, int, float], bool], priority_queues: int,
                 link_bps: Callable[[int], float]):
        """`pause(port, priority, seconds) -> honoured`; `link_bps(port)` gives the rate quanta
        refer to."""
        self.pause = pause
        self.priority_queues = priority_queues
        self.link_bps = link_bps
        self.frames = 0
        self.ignored = 0  # frames every queue of which ignored them (held stuck)

    def handle(self, port: int, frame: bytes) -> bool | None:
        """Apply `frame` if it is a PFC frame received on `port`: None if it is not one, True
        if it goes on into the pipeline, False if it stops here (every queue it pauses
        ignored it)."""
        classes = parse_pfc(frame)
        if classes is None:
            return None
        self.frames += 1
        bps = self.link_bps(port)
        honoured = [self.pause(port, prio, quanta * 512 / bps)
                    for prio, quanta in classes if prio < self.priority_queues]
        if honoured and not any(honoured):
            self.ignored += 1
            return False
        return True


REFRESHES_PER_PAUSE = 4  # a refresh may come up to 3/4 of a pause late (a busy machine)


class PauseHold:
    """The pauses a switch sent, refreshed while its buffer holds their port's traffic."""

    def __init__(self, held: Callable[[int, int], int], link_bps: Callable[[int], float]):
        """`held(port, priority)`: the depth of the deepest queue of that class holding a
        packet that came in on `port`."""
        self.held = held
        self.link_bps = link_bps
        self.threshold: int | None = None  # None: off
        self.refreshed = 0
        self._sent: dict[tuple[int, int], tuple[bytes, float, float]] = {}  # frame, period, next

    def set_threshold(self, packets: int | None) -> None:
        if packets is not None and packets < 0:
            raise ValueError(f"pause hold threshold must be >= 0 packets, got {packets}")
        self.threshold = packets
        if packets is None:
            self._sent.clear()

    def on_transmit(self, port: int, frame: bytes, now: float) -> None:
        """Note a frame the switch sends out of `port` (PFC frames only matter)."""
        if self.threshold is None:
            return
        classes = parse_pfc(frame)
        if classes is None:
            return
        for prio, quanta in classes:
            if quanta == 0:
                self._sent.pop((port, prio), None)
            else:
                period = quanta * 512 / self.link_bps(port) / REFRESHES_PER_PAUSE
                self._sent[(port, prio)] = (frame, period, now + period)

    def next_due(self) -> float | None:
        return min((due for _f, _p, due in self._sent.values()), default=None)

    def due(self, now: float) -> list[tuple[int, bytes]]:
        """(port, frame) to send again now; pauses whose buffer drained are dropped."""
        out = []
        for (port, prio), (frame, period, due) in list(self._sent.items()):
            if due > now:
                continue
            if self.threshold is not None and self.held(port, prio) > self.threshold:
                self._sent[(port, prio)] = (frame, period, now + period)
                out.append((port, frame))
                self.refreshed += 1
            else:
                del self._sent[(port, prio)]
        return out


def sysfs_link_bps(iface: str, default_mbps: float = 10_000) -> float:
    """The interface's speed from sysfs in bit/s (veth reports 10 Gb/s; unknown -> default)."""
    try:
        with open(f"/sys/class/net/{iface}/speed") as f:
            mbps = int(f.read().strip())
    except (OSError, ValueError):
        mbps = -1
    return (mbps if mbps > 0 else default_mbps) * 1e6
