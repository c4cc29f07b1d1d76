"""Switch ports: Linux interfaces opened as AF_PACKET raw sockets, as BMv2 does.

Each port receives every frame arriving on its interface (copies of frames the switch itself
sends are ignored: PACKET_IGNORE_OUTGOING, and the PACKET_OUTGOING check as a fallback) and
transmits frames with `send`. With a pcap directory, `<iface>_in.pcap` and `<iface>_out.pcap`
record the port's traffic like BMv2's `--pcap`.

The kernel strips 802.1Q tags off received frames before packet sockets see them (the tag
travels as metadata); like libpcap, the port puts the tag back from PACKET_AUXDATA, so the
pipeline sees the frame as it was on the wire.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import struct
from dataclasses import dataclass
from typing import NamedTuple

from p4switch.switch.pcap import PcapWriter
from p4switch.switch.rings import MIN_FRAME, Rings

log = logging.getLogger("p4switch.ports")
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
PACKET_AUXDATA = 8
PACKET_STATISTICS = 6
_STATS = struct.Struct("=II")  # struct tpacket_stats: tp_packets, tp_drops
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
_AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata
_ANC_SIZE = socket.CMSG_SPACE(_AUXDATA.size)
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
RECV_BUF = 8 * 1024 * 1024  # BMv2 (libpcap) has 2 MB; see _set_buffers
MAX_FRAME = 65536
BATCH = 64  # frames read from one port per wake-up
RX_RING_FRAMES = 2048  # 2 KiB slots of a port's receive ring (jumbo: the bytes in fewer, larger
# slots, rings.slot_size); 0: one recvmsg per frame
TX_RING_FRAMES = 256  # slots of its transmit ring; 0: one send per frame


class RingLayout(NamedTuple):
    rx: int  # the receive ring's address in this process
    rx_slots: int
    tx: int  # the transmit ring's address
    tx_slots: int
    tx_max_len: int  # the largest frame a transmit slot takes
    direct_fd: int  # the socket that sends what the transmit ring does not take
    rx_head: int  # the next slot to read
    tx_head: int  # the next slot to fill
    slot: int  # bytes per slot of either ring


def _with_vlan_tag(data: bytes, aux: bytes) -> bytes:
    """The frame with the 802.1Q tag the kernel moved into the aux data (if any) put back."""
    status, _, _, _, _, tci, tpid = _AUXDATA.unpack_from(aux)
    if not status & TP_STATUS_VLAN_VALID:
        return data
    if not status & TP_STATUS_VLAN_TPID_VALID:
        tpid = 0x8100
    return data[:12] + struct.pack("!HH", tpid, tci) + data[12:]


def _set_buffers(sock: socket.socket, size: int) -> None:
    """Socket buffers of `size` bytes; root may exceed net.core.rmem_max/wmem_max (the *FORCE
    options). On a shared 2-core machine the switch process is regularly descheduled for
    100-300 ms; 8 MB rides that out instead of dropping (which would break lossless-fabric
    experiments), at the price of hiding a sustained overload as latency before ingress for a
    while. Drops that still happen show as `rx_dropped` (`port_stats`)."""
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, size)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, plain, size)


def _mtu(iface: str) -> int:
    try:
        with open(f"/sys/class/net/{iface}/mtu") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1500


class PortError(Exception):
    """An interface cannot be opened as a switch port."""


@dataclass
class PortCounters:
    rx_packets: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    tx_errors: int = 0
    rx_dropped: int = 0  # frames the kernel dropped because the socket buffer was full


class RawPort:
    """One switch port bound to one Linux interface."""

    def __init__(self, number: int, iface: str, pcap_dir: str | None = None,
                 rx_ring: int = RX_RING_FRAMES, tx_ring: int = TX_RING_FRAMES):
        self.number = number
        self.iface = iface
        self.counters = PortCounters()
        try:
            self.ifindex = socket.if_nametoindex(iface)
        except OSError as exc:
            raise PortError(f"interface {iface!r} (port {number}) does not exist") from exc
        # Protocol 0 until bound: an unbound socket that receives nothing yet is not unhooked
        # again by bind, which would wait for an RCU grace period (as setting up a ring does).
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        self._rings = None
        try:
            _set_buffers(sock, RECV_BUF)
            # kernels before 4.20 lack it: recv_batch filters by packet type as well
            with contextlib.suppress(OSError):
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            if rx_ring or tx_ring:
                try:
                    self._rings = Rings(sock, rx_ring, tx_ring, _mtu(iface) + 14)
                except OSError as exc:  # no PACKET_MMAP (or no memory for it)
                    log.warning("port %d (%s): no PACKET_MMAP rings (%s); one system call per "
                                "frame", number, iface, exc)
            sock.bind((iface, ETH_P_ALL))
            sock.setblocking(False)
        except OSError as exc:
            if self._rings is not None:
                self._rings.close()
            sock.close()
            raise PortError(f"cannot open interface {iface!r} (port {number}): {exc}") from exc
        self.sock = sock
        self._rx = self._rings.rx if self._rings is not None else None
        self._tx = self._rings.tx if self._rings is not None else None
        self._direct = sock  # sends what the transmit ring does not take
        if self._tx is not None:
            self._direct = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # receives none
            self._direct.bind((iface, 0))
        self._pcap_in = self._pcap_out = None
        if pcap_dir is not None:
            self._pcap_in = PcapWriter(os.path.join(pcap_dir, f"{iface}_in.pcap"))
            self._pcap_out = PcapWriter(os.path.join(pcap_dir, f"{iface}_out.pcap"))

    def fileno(self) -> int:
        return self.sock.fileno()

    def recv_batch(self, limit: int = BATCH) -> list[bytes]:
        """Frames waiting on the socket (at most `limit`), without blocking."""
        if self._rx is not None:
            frames = self._rx.take(limit, MAX_FRAME)
        else:
            frames = self._recvmsg_batch(limit)
        if frames:
            c = self.counters
            c.rx_packets += len(frames)
            c.rx_bytes += sum(map(len, frames))
            if self._pcap_in is not None:
                for f in frames:
                    self._pcap_in.write(f)
        return frames

    def _recvmsg_batch(self, limit: int) -> list[bytes]:
        frames = []
        recvmsg = self.sock.recvmsg
        for _ in range(limit):
            try:
                data, ancdata, _, addr = recvmsg(MAX_FRAME, _ANC_SIZE)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno in (errno.ENETDOWN, errno.ENXIO):
                    break
                raise
            if addr[2] == PACKET_OUTGOING:
                continue
            for level, kind, aux in ancdata:
                if level == SOL_PACKET and kind == PACKET_AUXDATA:
                    data = _with_vlan_tag(data, aux)
            frames.append(data)
        return frames

    def kernel_drops(self) -> int:
        """Frames dropped so far by the kernel on this port's socket (buffer full)."""
        with contextlib.suppress(OSError):
            _, drops = _STATS.unpack(self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS,
                                                          _STATS.size))
            self.counters.rx_dropped += drops  # the kernel resets them on every read
        if self._rx is not None:
            self.counters.rx_dropped += self._rx.truncated
            self._rx.truncated = 0
        return self.counters.rx_dropped

    def send(self, frame: bytes) -> bool:
        """Transmit one frame (with a transmit ring: queue it until `flush`); False (and a tx
        error counted) if the kernel refuses it. When the ring's slots are still held by the
        kernel (frames in the link's queue), the frame goes to the kernel at once: its link
        queue takes or drops it and counts the drop, where a full ring would drop it unseen."""
        tx = self._tx
        queued = False
        if tx is not None and MIN_FRAME <= len(frame) <= tx.max_len:
            queued = tx.put(frame)
            if not queued:
                self.flush()  # its slot is busy: hand the ring to the kernel, then try again
                queued = tx.put(frame)
        if not queued:
            if tx is not None:
                self.flush()  # what is queued goes first
            try:
                self._direct.send(frame)
            except OSError:
                self.counters.tx_errors += 1
                return False
        self.counters.tx_packets += 1
        self.counters.tx_bytes += len(frame)
        if self._pcap_out is not None:
            self._pcap_out.write(frame)
        return True

    def flush(self) -> None:
        """Hand the frames queued in the transmit ring to the kernel; those it refuses count
        as tx errors, as with a send per frame."""
        if self._tx is None:
            return
        refused = self._tx.flush()
        if refused:
            c = self.counters
            c.tx_errors += len(refused)
            c.tx_packets -= len(refused)
            c.tx_bytes -= sum(refused)

    @property
    def ring_layout(self) -> RingLayout | None:
        """Where this port's PACKET_MMAP rings are (None without both rings), for a data
        plane in C that takes them over (p4switch/cdp/ports.py)."""
        if self._rings is None or self._rx is None or self._tx is None:
            return None
        rx, tx = self._rings.addresses()
        if self._tx.pending:
            self.flush()  # the frames queued here go out before the new owner's
        return RingLayout(rx, self._rx.slots, tx, self._tx.slots, self._tx.max_len,
                          self._direct.fileno(), self._rx.head, self._tx.head, self._rx.slot)

    @property
    def rings(self) -> tuple[bool, bool]:
        """Whether frames are received and sent through PACKET_MMAP rings."""
        return self._rx is not None, self._tx is not None

    def close(self) -> None:
        if self._rings is not None:
            self._rings.close()
        if self._direct is not self.sock:
            self._direct.close()
        self.sock.close()
        for w in (self._pcap_in, self._pcap_out):
            if w is not None:
                w.close()
