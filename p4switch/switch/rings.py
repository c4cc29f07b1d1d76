"""PACKET_MMAP rings (TPACKET_V2) on a port's AF_PACKET socket
(Documentation/networking/packet_mmap.rst).

Receive: the kernel copies each received frame into a slot of a ring shared with the switch and
flips the slot's status to TP_STATUS_USER; reading a burst of frames costs no system call, only
a poll when the ring is empty. Frames larger than a slot are still delivered whole: with
PACKET_COPY_THRESH the kernel also queues them on the socket and marks the slot TP_STATUS_COPY.

Transmit: frames are written into slots marked TP_STATUS_SEND_REQUEST and one send() hands the
whole burst to the kernel, so the next hop is woken once per burst rather than once per frame.

Both rings of a socket live in one mapping, the receive ring first.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import socket
import struct
import sys

SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_COPY_THRESH = 7
PACKET_VERSION = 10
PACKET_TX_RING = 13
PACKET_LOSS = 14
TPACKET_V2 = 1
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1 << 0
TP_STATUS_COPY = 1 << 1
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6
TP_STATUS_AVAILABLE = 0
TP_STATUS_SEND_REQUEST = 1
PACKET_OUTGOING = 4

FRAME_SIZE = 2048  # the smallest slot: header + sockaddr_ll + a 1518-byte frame, room to spare
BLOCK_SIZE = 1 << 16
_RX_MAC_AT = 66  # a received frame's offset in its slot: TPACKET_ALIGN(52 + 16) - 14
MIN_FRAME = 14  # shorter frames are refused by the kernel; they are sent without the ring
_REQ = struct.Struct("=IIII")  # struct tpacket_req: block_size, block_nr, frame_size, frame_nr
# struct tpacket2_hdr: tp_status, tp_len, tp_snaplen, tp_mac, tp_net, tp_sec, tp_nsec,
# tp_vlan_tci, tp_vlan_tpid, 4 bytes padding; then (16-aligned) struct sockaddr_ll
_HDR = struct.Struct("=IIIHHIIHH4x")
_PKTTYPE_AT = 32 + 10  # sll_pkttype in the sockaddr_ll after the header
_TX_DATA_AT = 32  # TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)
_TX_LEN = struct.Struct("=II")  # tp_len, tp_snaplen
_STATUS_LOW = 0 if sys.byteorder == "little" else 3  # the status word's low byte
_KERNEL = bytes(4)  # TP_STATUS_KERNEL == TP_STATUS_AVAILABLE
_SEND_REQUEST = TP_STATUS_SEND_REQUEST.to_bytes(4, sys.byteorder)


_libc = ctypes.CDLL(None, use_errno=True)


def _set_ring(sock: socket.socket, option: int, request: bytes) -> None:
    """setsockopt(PACKET_RX_RING / PACKET_TX_RING) without holding the GIL: the kernel waits
    for an RCU grace period there, so the ports of a switch set up side by side share them."""
    if _libc.setsockopt(sock.fileno(), SOL_PACKET, option, request, len(request)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def slot_size(max_frame: int) -> int:
    """The slot of a port whose frames are up to `max_frame` bytes (its MTU + 14): FRAME_SIZE,
    or for jumbo frames the power of two (slots tile a block: slot i is at i * slot) that a
    received frame with an 802.1Q tag fits, so it is not copied through the socket instead (a
    system call per frame); at most a block."""
    need = _RX_MAC_AT + max_frame + 4
    return min(BLOCK_SIZE, max(FRAME_SIZE, 1 << (need - 1).bit_length()))


def _request(frames: int, slot: int) -> tuple[int, int, bytes]:
    """(slots, bytes, struct tpacket_req) of a ring of at least `frames` slots of `slot`
    bytes."""
    per_block = BLOCK_SIZE // slot
    blocks = max(1, -(-frames // per_block))
    slots = blocks * per_block
    return slots, blocks * BLOCK_SIZE, _REQ.pack(BLOCK_SIZE, blocks, slot, slots)


class RxRing:
    """Frames received on the socket, in arrival order."""

    def __init__(self, sock: socket.socket, ring: mmap.mmap, base: int, slots: int,
                 slot: int = FRAME_SIZE):
        self._sock, self._map, self._base, self.slots = sock, ring, base, slots
        self.slot = slot  # bytes per slot
        self._head = 0
        self.truncated = 0  # frames cut to a slot whose whole copy the kernel could not queue

    @property
    def head(self) -> int:
        """The next slot to read."""
        return self._head

    def take(self, limit: int, max_frame: int) -> list[bytes]:
        """Up to `limit` frames the kernel has filled in, their slots handed back; 802.1Q tags
        the kernel stripped are put back, frames this host sent out are skipped."""
        frames: list[bytes] = []
        ring, slots, base, unpack = self._map, self.slots, self._base, _HDR.unpack_from
        head, size = self._head, self.slot
        for _ in range(limit):
            at = base + head * size
            if not ring[at + _STATUS_LOW] & TP_STATUS_USER:
                break
            status, length, snap, mac, _, _, _, tci, tpid = unpack(ring, at)
            skip = ring[at + _PKTTYPE_AT] == PACKET_OUTGOING
            if status & TP_STATUS_COPY:
                try:  # the whole frame, queued on the socket in ring order
                    data = self._sock.recv(max_frame)
                except BlockingIOError:
                    data = b""
            elif snap == length:
                data = ring[at + mac:at + mac + snap]
            else:
                data = b""
            if not data:
                self.truncated += 1
                skip = True
            ring[at:at + 4] = _KERNEL
            head = head + 1 if head + 1 < slots else 0
            if skip:
                continue
            if status & TP_STATUS_VLAN_VALID:
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
            frames.append(data)
        self._head = head
        if not frames:  # woken up for an error (the link went down): clear it, or poll spins
            self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        return frames


class TxRing:
    """Frames queued for the socket, sent in bursts by `flush`. A frame outside
    MIN_FRAME..`max_len` is the caller's to send, after a flush (to keep the order) and through
    another socket: with a transmit ring, send() on this one only flushes the ring."""

    def __init__(self, sock: socket.socket, ring: mmap.mmap, base: int, slots: int,
                 max_len: int, slot: int = FRAME_SIZE):
        self._sock, self._map, self._base, self.slots = sock, ring, base, slots
        self.slot = slot  # bytes per slot
        self._head = 0
        self.pending = 0
        self.max_len = min(slot - _TX_DATA_AT, max_len)

    @property
    def head(self) -> int:
        """The next slot to fill."""
        return self._head

    def put(self, frame: bytes) -> bool:
        """Queue `frame` (MIN_FRAME..`max_len` bytes); False if its slot is not free (the
        caller flushes, which counts what the kernel refuses, and tries again)."""
        ring = self._map
        at = self._base + self._head * self.slot
        if ring[at + _STATUS_LOW] != TP_STATUS_AVAILABLE:
            return False
        n = len(frame)
        ring[at + _TX_DATA_AT:at + _TX_DATA_AT + n] = frame
        _TX_LEN.pack_into(ring, at + 4, n, n)
        ring[at:at + 4] = _SEND_REQUEST
        self._head = self._head + 1 if self._head + 1 < self.slots else 0
        self.pending += 1
        return True

    def flush(self) -> list[int]:
        """Hand every queued frame to the kernel; the lengths of those it refused. As with a
        send per frame, a frame the egress path drops (ENOBUFS: a tc filter, a full qdisc) is
        lost and the frames after it still go out; when the interface refuses them all (it is
        down), their slots are taken back."""
        refused: list[int] = []
        retried = False
        while self.pending:
            try:
                self._sock.send(b"", socket.MSG_DONTWAIT)
            except OSError as exc:
                if exc.errno == errno.ENOBUFS:
                    dropped = self._drop_unsent_head()
                    if dropped is not None:
                        refused.append(dropped)
                    continue
                if not retried:  # once more: the error may be a stale one (down and up again)
                    retried = True
                    continue
                refused.extend(self._take_back())
                break
            self.pending = 0
        return refused

    def _unsent(self) -> tuple[int, int]:
        """(slot, count): the first queued frame the kernel has not taken yet (its own ring
        position: it stops there on an error and retries that frame at the next send) and how
        many queued frames are left from there on."""
        ring, slots = self._map, self.slots
        for back in range(self.pending, 0, -1):
            slot = (self._head - back) % slots
            if ring[self._base + slot * self.slot + _STATUS_LOW] == TP_STATUS_SEND_REQUEST:
                return slot, back
        return self._head, 0

    def _drop_unsent_head(self) -> int | None:
        """The kernel refused the frame at its position and would offer it again: make it
        empty, which the kernel skips (PACKET_LOSS; shorter than an Ethernet header) before
        going on with the frames behind it; returns the frame's length (None: no frame of
        this flush is left, so the error refused none of them)."""
        first, left = self._unsent()
        if not left:
            self.pending = 0
            return None
        at = self._base + first * self.slot
        length = _TX_LEN.unpack_from(self._map, at + 4)[0]
        _TX_LEN.pack_into(self._map, at + 4, 0, 0)
        self.pending = left
        return length

    def _take_back(self) -> list[int]:
        """After the interface refused the frames: the kernel stopped at the first one still
        marked for sending and left the rest alone; mark them free again and rewind to it, in
        step with the kernel's own position. (An emptied frame was counted when it was.)"""
        ring, base, slots = self._map, self._base, self.slots
        first, left = self._unsent()
        refused: list[int] = []
        for k in range(left):
            at = base + (first + k) % slots * self.slot
            length = _TX_LEN.unpack_from(ring, at + 4)[0]
            if length:
                refused.append(length)
            ring[at:at + 4] = _KERNEL
        self._head = first
        self.pending = 0
        return refused


class Rings:
    """The receive and transmit rings of one socket (either may be absent: 0 frames)."""

    def __init__(self, sock: socket.socket, rx_frames: int, tx_frames: int, max_tx: int):
        """`rx_frames`, `tx_frames`: slots of FRAME_SIZE bytes; a port of larger frames
        (`max_tx`) gets as many bytes in fewer, larger slots (`slot_size`)."""
        # options the kernel takes only before a ring exists
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_COPY_THRESH, 1)
        sock.setsockopt(SOL_PACKET, PACKET_LOSS, 1)  # a refused frame does not stall the ring
        self.slot = slot = slot_size(max_tx)
        rx_slots = rx_size = tx_slots = tx_size = 0
        if rx_frames:
            rx_slots, rx_size, request = _request(rx_frames * FRAME_SIZE // slot, slot)
            _set_ring(sock, PACKET_RX_RING, request)
        if tx_frames:
            tx_slots, tx_size, request = _request(tx_frames * FRAME_SIZE // slot, slot)
            _set_ring(sock, PACKET_TX_RING, request)
        self._map = mmap.mmap(sock.fileno(), rx_size + tx_size, mmap.MAP_SHARED,
                              mmap.PROT_READ | mmap.PROT_WRITE)
        self.rx = RxRing(sock, self._map, 0, rx_slots, slot) if rx_frames else None
        self.tx = (TxRing(sock, self._map, rx_size, tx_slots, max_tx, slot) if tx_frames
                   else None)

    def addresses(self) -> tuple[int, int]:
        """The addresses of the receive and transmit rings in this process (0: none), for a
        data plane in C that takes them over (p4switch/cdp/ports.py)."""
        view = ctypes.c_char.from_buffer(self._map)
        base = ctypes.addressof(view)
        del view  # no export left: the mapping can still be closed
        return (base if self.rx is not None else 0,
                base + self.tx._base if self.tx is not None else 0)

    def close(self) -> None:
        self._map.close()
