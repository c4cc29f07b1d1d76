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
every port of its NIC. Arrivals are the kernel's receive stamps (SO_TIMESTAMPNS), so the
receiver reads its socket every `READ_EVERY_S` while datagrams flow, many per wake-up, and a
record's times do not depend on when the process got a CPU (where the kernel does not stamp,
it reads each datagram as it comes and stamps it then).

Both speak JSON lines on stdout: `{"event": "ready"}` when sockets are open; the receiver then
`{"event": "bins", ...}` every `--report` seconds with the bins completed and the silences that
lost packets since the last report (live views draw them; a silence is reported `SETTLE_S` after
it ended), and on SIGTERM a final `{"event": "result", "flows": [...]}` per flow: packets,
bytes, lost PSNs, and every silence between two arrivals that is longer than `--gap` or skipped
PSNs (last arrival before, first after, PSNs skipped across it that never arrived: a packet
that arrives late, reordered, is not lost).

`trace` finds each flow's path without the others in the way: for every flow in turn it waits
for a line on stdin, sends `--count` datagrams of that flow alone (same 5-tuple, so the same
ECMP choices) and says `{"event": "sent", "flow": i}`; the caller reads the switches' port
counters around each burst.
"""

from __future__ import annotations

import bisect
import ctypes
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path

from traffic.headers import ROCE_UDP_PORT, UC_OFFSET, WRITE_ONLY
from traffic.wire import BTH_HDR, BTH_LEN, ICRC_LEN, FieldAt

ROCE_PORT = ROCE_UDP_PORT
UC_WRITE_ONLY = UC_OFFSET + WRITE_ONLY
STAMP_LEN = 8  # send time, ns, big-endian, right after the BTH
HEADER = BTH_LEN + STAMP_LEN + ICRC_LEN
MAX_HOLES = 1 << 16  # a longer run of skipped PSNs is counted lost even if some arrive later
SETTLE_S = 0.1  # a silence is reported live this long after it ended: late packets fill it first
READ_EVERY_S = 0.005  # the receiver reads its socket at most this often while datagrams flow
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # (Linux's value; also SCM_TIMESTAMPNS)
_STAMP = struct.Struct("@qq")  # struct timespec
_ANC_SPACE = socket.CMSG_SPACE(_STAMP.size)
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


@dataclass
class FlowRecord:
    """What the receiver knows about one flow (source IP, QPN)."""

    src: str
    qpn: int
    packets: int = 0
    bytes: int = 0
    lost: int = 0  # PSNs skipped and never filled
    first_t: float = 0.0
    last_t: float = 0.0
    next_psn: int = 0
    # (last arrival before, first after, PSNs skipped across it and not received since)
    gaps: list[tuple[float, float, int]] = field(default_factory=list)
    bins: dict[int, int] = field(default_factory=dict)  # bin index -> bytes
    missing: dict[int, int] = field(default_factory=dict)  # skipped PSN -> its gap (-1: none)

    def arrive(self, now: float, psn: int, size: int, t0: float, bin_s: float,
               gap_s: float) -> None:
        skipped = max(0, psn - self.next_psn)
        if self.packets and (now - self.last_t > gap_s or skipped):
            self.gaps.append((self.last_t, now, skipped))
        if not self.packets:
            self.first_t = now
        if psn >= self.next_psn:
            if skipped:
                self.lost += skipped
                if skipped <= MAX_HOLES:
                    gap = len(self.gaps) - 1 if self.packets else -1
                    self.missing.update(dict.fromkeys(range(self.next_psn, psn), gap))
            self.next_psn = psn + 1
        elif psn in self.missing:  # a late packet fills a hole: reordered, not lost
            gap = self.missing.pop(psn)
            self.lost -= 1
            if gap >= 0:
                before, after, lost = self.gaps[gap]
                self.gaps[gap] = (before, after, lost - 1)
        self.packets += 1
        self.bytes += size
        self.last_t = now
        index = int((now - t0) / bin_s)
        self.bins[index] = self.bins.get(index, 0) + size

    def summary(self) -> dict:
        out = asdict(self)
        del out["bins"], out["next_psn"], out["missing"]
        return out


def _emit(event: str, **data) -> None:
    sys.stdout.write(json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()


class _Stop:
    def __init__(self) -> None:
        self.flag = False
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._set)

    def _set(self, *_: object) -> None:
        self.flag = True


def _stamped_socket() -> tuple[socket.socket, bool]:
    """The receiver's socket, and whether the kernel stamps each datagram's arrival
    (SO_TIMESTAMPNS)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        stamped = True
    except OSError:
        stamped = False
    sock.bind(("0.0.0.0", ROCE_PORT))
    sock.setblocking(False)
    return sock, stamped


def _arrival(ancdata: list[tuple[int, int, bytes]]) -> float | None:
    """The kernel's arrival stamp of a datagram, in epoch seconds (None: not stamped)."""
    for level, kind, value in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= _STAMP.size:
            sec, nsec = _STAMP.unpack_from(value)
            return sec + nsec * 1e-9
    return None


def receive(t0: float, bin_s: float, gap_s: float, report_s: float) -> None:
    stop = _Stop()
    sock, stamped = _stamped_socket()
    flows: dict[tuple[str, int], FlowRecord] = {}
    reported: dict[tuple[str, int], int] = {}  # bins below this index were reported
    gaps_reported: dict[tuple[str, int], int] = {}  # gaps already reported (lossy ones sent)
    _emit("ready")
    next_report = time.time() + report_s
    while not stop.flag:
        try:
            ready, _, _ = select.select([sock], [], [], 0.05)
        except InterruptedError:
            continue
        # Taken before reading: every datagram stamped before it is read before the report.
        now = time.time()
        while ready:
            try:
                data, ancdata, _, (src, _port) = sock.recvmsg(65536, _ANC_SPACE)
            except BlockingIOError:
                break
            parsed = decode(data)
            if parsed is None:
                continue
            qpn, psn, _stamp = parsed
            flow = flows.get((src, qpn))
            if flow is None:
                flow = flows[(src, qpn)] = FlowRecord(src, qpn)
            arrived = _arrival(ancdata)  # None where the socket is not stamped
            flow.arrive(time.time() if arrived is None else arrived, psn, len(data), t0, bin_s,
                        gap_s)
        if now >= next_report:
            next_report = now + report_s
            done = int((now - t0) / bin_s)  # the bin in progress is not reported yet
            out, lossy = {}, {}
            for key, flow in flows.items():
                name = f"{key[0]}/{key[1]}"
                start = reported.get(key, min(flow.bins, default=done))
                out[name] = [[i, flow.bins.get(i, 0)] for i in range(start, done)]
                reported[key] = done
                first = gaps_reported.get(key, 0)
                settled = bisect.bisect_right(flow.gaps, now - SETTLE_S, lo=first,
                                              key=lambda g: g[1])
                lossy[name] = [g for g in flow.gaps[first:settled] if g[2]]
                gaps_reported[key] = settled
            _emit("bins", bin_s=bin_s, flows=out, lossy_gaps=lossy)
        if ready and stamped:  # let datagrams gather: their stamps say when each arrived
            time.sleep(READ_EVERY_S)
    _emit("result", flows=[f.summary() for f in flows.values()])


def send(flows: list[tuple[str, int, int]], pps: float, size: int, duration: float,
         pacer: str = "auto") -> None:
    """Every flow at `pps` datagrams/s, interleaved, until `duration` ends or SIGTERM. `pacer`:
    "c" runs the loop in C (traffic/c/paced_send.c), "python" here, "auto" in C where it can
    be built; the same schedule and datagrams either way."""
    stop = _Stop()
    socks = []
    for _dst, _qpn, sport in flows:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", sport))
        socks.append(s)
    loop = _python_pacing if pacer == "python" else _c_pacing(required=pacer == "c")
    _emit("ready")
    sent, errors = loop(flows, socks, pps, size, duration, stop)
    _emit("result", flows=[{"dst": d, "qpn": q, "sport": p, "sent": n, "send_errors": e}
                           for (d, q, p), n, e in zip(flows, sent, errors, strict=True)])


PacingLoop = Callable[[list[tuple[str, int, int]], list[socket.socket], float, int, float,
                       "_Stop"], tuple[list[int], list[int]]]


def _python_pacing(flows: list[tuple[str, int, int]], socks: list[socket.socket], pps: float,
                   size: int, duration: float, stop: _Stop) -> tuple[list[int], list[int]]:
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


def _c_pacing(required: bool) -> PacingLoop:
    """The C pacing loop, or (unless `required`) the Python one where C cannot be built."""
    from p4switch.cdp.build import load_library
    from p4switch.native import NativeUnavailable

    try:
        lib = load_library("paced_send", [Path(__file__).resolve().parent / "c" / "paced_send.c"])
    except NativeUnavailable as e:
        if required:
            raise SystemExit(f"paced send: the C pacer cannot be built here: {e}") from None
        return _python_pacing
    u64s = ctypes.POINTER(ctypes.c_uint64)
    lib.paced_send.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                               ctypes.POINTER(_SockaddrIn), ctypes.POINTER(ctypes.c_char_p),
                               ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                               ctypes.c_uint32, ctypes.c_double, ctypes.c_double, ctypes.c_int,
                               u64s, u64s]

    def loop(flows: list[tuple[str, int, int]], socks: list[socket.socket], pps: float,
             size: int, duration: float, stop: _Stop) -> tuple[list[int], list[int]]:
        n = len(flows)
        templates = [ctypes.create_string_buffer(encode(qpn, 0, size, 0), max(size, HEADER))
                     for _dst, qpn, _sport in flows]
        dsts = (_SockaddrIn * n)(*(
            _SockaddrIn(socket.AF_INET, socket.htons(ROCE_PORT),
                        int.from_bytes(socket.inet_aton(dst), sys.byteorder))
            for dst, _qpn, _sport in flows))
        stop_r, stop_w = os.pipe()
        os.set_blocking(stop_w, False)
        previous = signal.set_wakeup_fd(stop_w)  # the signal handlers' C half writes to it
        sent, errors = (ctypes.c_uint64 * n)(), (ctypes.c_uint64 * n)()
        try:
            if stop.flag:  # stopped before the wake-up pipe was in place
                return list(sent), list(errors)
            err = lib.paced_send(
                n, (ctypes.c_int * n)(*(s.fileno() for s in socks)), dsts,
                (ctypes.c_char_p * n)(*(ctypes.cast(t, ctypes.c_char_p) for t in templates)),
                max(size, HEADER), _PSN.at, _PSN.size, BTH_LEN, pps, duration, stop_r, sent,
                errors)
        finally:
            signal.set_wakeup_fd(previous)
            os.close(stop_r)
            os.close(stop_w)
        if err:
            raise OSError(-err, "the C pacing loop failed")
        return list(sent), list(errors)

    return loop


def trace(flows: list[tuple[str, int, int]], count: int) -> None:
    """Per flow, on a line from stdin: `count` datagrams of it alone, then a `sent` event."""
    _emit("ready")
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
        _emit("sent", flow=i, send_errors=errors)
