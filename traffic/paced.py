"""Paced RoCEv2 flows through the host's own network stack, with per-packet arrival records.

    python -m traffic paced send --flow DST_IP:QPN:SPORT ... --pps 400 --size 256
    python -m traffic paced recv --bin 0.01 --gap 0.005
    python -m traffic paced trace --flow DST_IP:QPN:SPORT ... --count 40

Each flow is one queue pair: UDP datagrams from its own source port (the ECMP entropy) to port
4791 carrying a BTH (RDMA WRITE ONLY, UC, the QPN, PSN = sequence number; laid out as scapy
declares it, `traffic.wire.BTH_HDR`), the send time (ns) and an ICRC field left zero (no switch
checks it). They leave through a kernel UDP socket, not a packet socket pinned to one interface,
so a dual-port NIC's multipath default route spreads the flows over both ports and moves them
when a port loses its link: the host-side failover of an HPN NIC. The receiver binds UDP 4791 on
every port of its NIC (traffic.paced_recv). Arrivals are the kernel's receive stamps
(SO_TIMESTAMPNS), so the receiver reads its socket every `READ_EVERY_S` while datagrams flow,
many per wake-up, and a record's times do not depend on when the process got a CPU (where the
kernel does not stamp, it reads each datagram as it comes and stamps it then). Both sides run
their loops in C where a C compiler is present (traffic/c/: `send --pacer`, `recv --reader`;
the same datagrams and the same records as the Python loops, which are the reference and the
fallback).

Both speak JSON lines on stdout: `{"event": "ready"}` when sockets are open; the receiver then
`{"event": "bins", ...}` every `--report` seconds with the bins completed and the silences that
lost packets since the last report (live views draw them; a silence is reported `SETTLE_S`
after it ended), and on SIGTERM a final `{"event": "result", "flows": [...]}` per flow:
packets, bytes, lost PSNs, and every silence between two arrivals that is longer than `--gap`
or skipped PSNs (last arrival before, first after, PSNs skipped across it that never arrived: a
packet that arrives late, reordered, is not lost).

`trace` finds each flow's path without the others in the way: for every flow in turn it waits
for a line on stdin, sends `--count` datagrams of that flow alone (same 5-tuple, so the same
ECMP choices) and says `{"event": "sent", "flow": i}`; the caller reads the switches' port
counters around each burst.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

from traffic.headers import ROCE_UDP_PORT, UC_OFFSET, WRITE_ONLY
from traffic.wire import BTH_HDR, BTH_LEN, ICRC_LEN, FieldAt

ROCE_PORT = ROCE_UDP_PORT
UC_WRITE_ONLY = UC_OFFSET + WRITE_ONLY
STAMP_LEN = 8  # send time, ns, big-endian, right after the BTH
HEADER = BTH_LEN + STAMP_LEN + ICRC_LEN
_OPCODE, _PKEY, _DQPN, _PSN = (BTH_HDR[name] for name in ("opcode", "pkey", "dqpn", "psn"))


def _put(buf: bytearray, at: FieldAt, value: int) -> None:
    """Write one BTH field (its bits only) into `buf`."""
    old = int.from_bytes(buf[at.span], "big") & ~at.mask
    buf[at.span] = (old | ((value << at.shift) & at.mask)).to_bytes(at.size, "big")


@cache
def _bth(qpn: int) -> tuple[bytes, bytes]:
    """A queue pair's BTH before and after its PSN (the PSN field is whole bytes)."""
    buf = bytearray(BTH_LEN)
    _put(buf, _OPCODE, UC_WRITE_ONLY)
    _put(buf, _PKEY, 0xFFFF)
    _put(buf, _DQPN, qpn)
    return bytes(buf[:_PSN.at]), bytes(buf[_PSN.end:])


def encode(qpn: int, psn: int, size: int, stamp_ns: int) -> bytes:
    """One datagram of `size` bytes (at least the BTH, the stamp and the ICRC)."""
    before, after = _bth(qpn)
    head = b"".join((before, (psn & 0xFFFFFF).to_bytes(_PSN.size, "big"), after,
                     stamp_ns.to_bytes(STAMP_LEN, "big")))
    return head + bytes(max(size, HEADER) - len(head))


def decode(data: bytes) -> tuple[int, int, int] | None:
    """(qpn, psn, stamp ns) of one datagram, None if it is not one of ours."""
    if len(data) < HEADER or _OPCODE.read(data) != UC_WRITE_ONLY:
        return None
    stamp = int.from_bytes(data[BTH_LEN:BTH_LEN + STAMP_LEN], "big")
    return _DQPN.read(data), _PSN.read(data), stamp


def emit(event: str, **data) -> None:
    sys.stdout.write(json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()


class Stop:
    """Set by SIGTERM or SIGINT."""

    def __init__(self) -> None:
        self.flag = False
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._set)

    def _set(self, *_: object) -> None:
        self.flag = True


@contextlib.contextmanager
def signal_pipe() -> Iterator[int]:
    """The read end of a pipe that a signal with a Python handler makes readable (the
    handler's C half writes to it): how a loop running in C learns of SIGTERM."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    previous = signal.set_wakeup_fd(write_fd)
    try:
        yield read_fd
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)


def send(flows: list[tuple[str, int, int]], pps: float, size: int, duration: float,
         pacer: str = "auto") -> None:
    """Every flow at `pps` datagrams/s, interleaved, until `duration` ends or SIGTERM. `pacer`:
    "c" runs the loop in C (traffic/c/paced_send.c), "python" here, "auto" in C where it can
    be built; the same schedule and datagrams either way."""
    stop = Stop()
    socks = []
    for _dst, _qpn, sport in flows:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", sport))
        socks.append(s)
    loop = _python_pacing if pacer == "python" else _c_pacing(required=pacer == "c")
    emit("ready")
    sent, errors = loop(flows, socks, pps, size, duration, stop)
    emit("result", flows=[{"dst": d, "qpn": q, "sport": p, "sent": n, "send_errors": e}
                           for (d, q, p), n, e in zip(flows, sent, errors, strict=True)])


PacingLoop = Callable[[list[tuple[str, int, int]], list[socket.socket], float, int, float,
                       "Stop"], tuple[list[int], list[int]]]


def _python_pacing(flows: list[tuple[str, int, int]], socks: list[socket.socket], pps: float,
                   size: int, duration: float, stop: Stop) -> tuple[list[int], list[int]]:
    """The pacing loop: (datagrams sent, sends refused) per flow."""
    sent = [0] * len(flows)
    errors = [0] * len(flows)
    interval = 1.0 / pps
    start = time.perf_counter()
    end = start + duration if duration > 0 else float("inf")
    due = [start + i * interval / len(flows) for i in range(len(flows))]
    while not stop.flag:
        i = min(range(len(flows)), key=due.__getitem__)
        now = time.perf_counter()
        if due[i] > now:
            if now >= end:
                break
            time.sleep(min(due[i], end) - now)
            continue
        dst, qpn, _sport = flows[i]
        try:
            socks[i].sendto(encode(qpn, sent[i], size, time.time_ns()), (dst, ROCE_PORT))
        except OSError:  # no route for a moment (every port of the NIC down): the packet is lost
            errors[i] += 1
        sent[i] += 1
        due[i] = max(due[i] + interval, now - 0.002)
    return sent, errors


class _SockaddrIn(ctypes.Structure):
    _fields_ = [("family", ctypes.c_ushort), ("port", ctypes.c_uint16),
                ("addr", ctypes.c_uint32), ("zero", ctypes.c_uint8 * 8)]


@cache
def send_library() -> ctypes.CDLL:
    """traffic/c/paced_send.c, built once per content and compiler and kept in the compile
    cache (NativeUnavailable where it cannot be)."""
    from p4switch.cdp.build import load_library

    lib = load_library("paced_send", [Path(__file__).resolve().parent / "c" / "paced_send.c"])
    u64s = ctypes.POINTER(ctypes.c_uint64)
    lib.paced_send.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(_SockaddrIn), ctypes.POINTER(ctypes.c_char_p),
                               ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                               ctypes.c_uint32, ctypes.c_double, ctypes.c_double, ctypes.c_int,
                               u64s, u64s]
    return lib


def _c_pacing(required: bool) -> PacingLoop:
    """The C pacing loop, or (unless `required`) the Python one where C cannot be built."""
    from p4switch.native import NativeUnavailable

    try:
        lib = send_library()
    except NativeUnavailable as e:
        if required:
            raise SystemExit(f"paced send: the C pacer cannot be built here: {e}") from None
        return _python_pacing

    def loop(flows: list[tuple[str, int, int]], socks: list[socket.socket], pps: float,
             size: int, duration: float, stop: Stop) -> tuple[list[int], list[int]]:
        n = len(flows)
        templates = [ctypes.create_string_buffer(encode(qpn, 0, size, 0), max(size, HEADER))
                     for _dst, qpn, _sport in flows]
        dsts = (_SockaddrIn * n)(*(
            _SockaddrIn(socket.AF_INET, socket.htons(ROCE_PORT),
                        int.from_bytes(socket.inet_aton(dst), sys.byteorder))
            for dst, _qpn, _sport in flows))
        sent, errors = (ctypes.c_uint64 * n)(), (ctypes.c_uint64 * n)()
        with signal_pipe() as stop_fd:
            if stop.flag:  # stopped before the wake-up pipe was in place
                return list(sent), list(errors)
            err = lib.paced_send(
                n, (ctypes.c_int * n)(*(s.fileno() for s in socks)), dsts,
                (ctypes.c_char_p * n)(*(ctypes.cast(t, ctypes.c_char_p) for t in templates)),
                max(size, HEADER), _PSN.at, _PSN.size, BTH_LEN, pps, duration, stop_fd, sent,
                errors)
        if err:
            raise OSError(-err, "the C pacing loop failed")
        return list(sent), list(errors)

    return loop


def trace(flows: list[tuple[str, int, int]], count: int) -> None:
    """Per flow, on a line from stdin: `count` datagrams of it alone, then a `sent` event."""
    emit("ready")
    for i, (dst, qpn, sport) in enumerate(flows):
        if not sys.stdin.readline():
            return  # the caller is gone
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0", sport))
            errors = 0
            for psn in range(count):
                try:
                    sock.sendto(encode(qpn, psn, HEADER, time.time_ns()), (dst, ROCE_PORT))
                except OSError:
                    errors += 1
        emit("sent", flow=i, send_errors=errors)
