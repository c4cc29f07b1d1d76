"""The receiving half of paced flows (`python -m traffic paced recv`, traffic.paced has the
datagrams' format and what the receiver reports): one record per flow, kept in Python
(`FlowRecord`, `PythonFlows`) or in C (traffic/c/paced_recv.c, `CFlows`), the same records
either way, and the loop that reads the socket into them and reports.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import os
import select
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Protocol

from traffic.paced import HEADER, ROCE_PORT, UC_WRITE_ONLY, Stop, decode, emit, signal_pipe
from traffic.wire import BTH_HDR, FieldAt

MAX_HOLES = 1 << 16  # a longer run of skipped PSNs is counted lost even if some arrive later
SETTLE_S = 0.1  # a silence is reported live this long after it ended: late packets fill it first
READ_EVERY_S = 0.005  # the receiver reads its socket at most this often while datagrams flow
POLL_S = 0.05  # the longest wait for a datagram before the receiver checks the report time
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # (Linux's value; also SCM_TIMESTAMPNS)
_STAMP = struct.Struct("@qq")  # struct timespec
_ANC_SPACE = socket.CMSG_SPACE(_STAMP.size)
Gap = tuple[float, float, int]  # last arrival before a silence, first after, PSNs lost in it


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
    gaps: list[Gap] = field(default_factory=list)  # lost: skipped and not received since
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


class Flows(Protocol):
    """The receiver's records, one per flow in the order of their first arrival, and the loop
    that reads datagrams into them: `PythonFlows` (FlowRecord) or `CFlows`
    (traffic/c/paced_recv.c), the same records either way."""

    def arrive(self, src: str, qpn: int, psn: int, size: int, now: float) -> None: ...

    def read_until(self, sock: socket.socket, stamped: bool, report_at: float,
                   stop: Stop) -> float | None:
        """Read datagrams until the clock has passed `report_at` when a read begins (that
        read's start time: every datagram stamped before it has been read) or a stop (None).
        Where the kernel stamps arrivals, reads are `READ_EVERY_S` apart while datagrams flow."""
        ...

    def count(self) -> int: ...

    def key(self, i: int) -> tuple[str, int]:
        """(source IP, QPN) of flow i."""
        ...

    def first_bin(self, i: int) -> int:
        """The lowest bin index flow i has bytes in."""
        ...

    def bin_bytes(self, i: int, start: int, end: int) -> list[int]:
        """Bytes of flow i in bins [start, end)."""
        ...

    def gaps_from(self, i: int, first: int) -> list[Gap]:
        """Flow i's silences from the `first`-th on."""
        ...

    def summaries(self) -> list[dict]:
        """Every flow's record as `FlowRecord.summary` says it."""
        ...


class PythonFlows:
    """`Flows` in Python: the reference, and what runs where C cannot be built."""

    def __init__(self, t0: float, bin_s: float, gap_s: float) -> None:
        self.t0, self.bin_s, self.gap_s = t0, bin_s, gap_s
        self.flows: dict[tuple[str, int], FlowRecord] = {}
        self.order: list[FlowRecord] = []

    def __enter__(self) -> PythonFlows:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def arrive(self, src: str, qpn: int, psn: int, size: int, now: float) -> None:
        flow = self.flows.get((src, qpn))
        if flow is None:
            flow = self.flows[(src, qpn)] = FlowRecord(src, qpn)
            self.order.append(flow)
        flow.arrive(now, psn, size, self.t0, self.bin_s, self.gap_s)

    def read_until(self, sock: socket.socket, stamped: bool, report_at: float,
                   stop: Stop) -> float | None:
        while not stop.flag:
            try:
                ready, _, _ = select.select([sock], [], [], POLL_S)
            except InterruptedError:
                continue
            now = time.time()  # taken before reading
            while ready:
                try:
                    data, ancdata, _, (src, _port) = sock.recvmsg(65536, _ANC_SPACE)
                except BlockingIOError:
                    break
                parsed = decode(data)
                if parsed is None:
                    continue
                qpn, psn, _stamp = parsed
                arrived = _arrival(ancdata)  # None where the socket is not stamped
                self.arrive(src, qpn, psn, len(data), time.time() if arrived is None else arrived)
            if now >= report_at:
                return now
            if ready and stamped:  # let datagrams gather: their stamps say when each arrived
                time.sleep(READ_EVERY_S)
        return None

    def count(self) -> int:
        return len(self.order)

    def key(self, i: int) -> tuple[str, int]:
        return self.order[i].src, self.order[i].qpn

    def first_bin(self, i: int) -> int:
        return min(self.order[i].bins)

    def bin_bytes(self, i: int, start: int, end: int) -> list[int]:
        bins = self.order[i].bins
        return [bins.get(k, 0) for k in range(start, end)]

    def gaps_from(self, i: int, first: int) -> list[Gap]:
        return self.order[i].gaps[first:]

    def summaries(self) -> list[dict]:
        return [flow.summary() for flow in self.order]


class _Field(ctypes.Structure):  # traffic.wire.FieldAt
    _fields_ = [("at", ctypes.c_uint32), ("size", ctypes.c_uint32), ("shift", ctypes.c_uint32),
                ("pad", ctypes.c_uint32), ("mask", ctypes.c_uint64)]


class _Header(ctypes.Structure):
    _fields_ = [("opcode", _Field), ("dqpn", _Field), ("psn", _Field),
                ("opcode_value", ctypes.c_uint64), ("min_len", ctypes.c_uint32)]


class _FlowView(ctypes.Structure):
    _fields_ = [("src", ctypes.c_uint32), ("qpn", ctypes.c_uint32),
                ("packets", ctypes.c_int64), ("bytes", ctypes.c_int64),
                ("lost", ctypes.c_int64), ("first_t", ctypes.c_double),
                ("last_t", ctypes.c_double), ("n_gaps", ctypes.c_int64),
                ("bin0", ctypes.c_int64)]


class _Gap(ctypes.Structure):
    _fields_ = [("before", ctypes.c_double), ("after", ctypes.c_double),
                ("lost", ctypes.c_int64)]


def _field(at: FieldAt) -> _Field:
    return _Field(at.at, at.size, at.shift, 0, at.mask)


@cache
def receive_library() -> ctypes.CDLL:
    """traffic/c/paced_recv.c, built once per content and compiler (NativeUnavailable where it
    cannot be)."""
    from p4switch.cdp.build import load_library

    lib = load_library("paced_recv", [Path(__file__).resolve().parent / "c" / "paced_recv.c"])
    handle, size_t, i64, u32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64, ctypes.c_uint32
    lib.rx_new.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_double, i64,
                           ctypes.POINTER(_Header)]
    lib.rx_new.restype = handle
    lib.rx_free.argtypes = [handle]
    lib.rx_free.restype = None
    lib.rx_arrive.argtypes = [handle, u32, u32, i64, i64, ctypes.c_double]
    lib.rx_run.argtypes = [handle, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                           ctypes.c_double, ctypes.c_double, ctypes.POINTER(ctypes.c_double)]
    lib.rx_count.argtypes = [handle]
    lib.rx_count.restype = size_t
    lib.rx_flow.argtypes = [handle, size_t, ctypes.POINTER(_FlowView)]
    lib.rx_flow.restype = None
    lib.rx_bins.argtypes = [handle, size_t, i64, i64, ctypes.POINTER(i64)]
    lib.rx_bins.restype = None
    lib.rx_gaps.argtypes = [handle, size_t, size_t, size_t, ctypes.POINTER(_Gap)]
    lib.rx_gaps.restype = None
    return lib


class CFlows:
    """`Flows` in C (traffic/c/paced_recv.c): the records and the loop, datagrams read many
    per system call. A context manager: inside it, SIGTERM and SIGINT end `read_until`."""

    def __init__(self, t0: float, bin_s: float, gap_s: float) -> None:
        self._lib = receive_library()
        fields = (_field(BTH_HDR[name]) for name in ("opcode", "dqpn", "psn"))
        header = _Header(*fields, UC_WRITE_ONLY, HEADER)
        self._rx = self._lib.rx_new(t0, bin_s, gap_s, MAX_HOLES, ctypes.byref(header))
        if not self._rx:
            raise MemoryError("the C receive loop's record could not be made")
        self._owned = contextlib.ExitStack()  # what __exit__ releases
        self._owned.callback(self._lib.rx_free, self._rx)
        self._wake = -1

    def __enter__(self) -> CFlows:
        self._wake = self._owned.enter_context(signal_pipe())
        return self

    def __exit__(self, *_: object) -> None:
        self._owned.close()

    def arrive(self, src: str, qpn: int, psn: int, size: int, now: float) -> None:
        err = self._lib.rx_arrive(self._rx, _ip_number(src), qpn, psn, size, now)
        if err:
            raise OSError(-err, "the C receive record failed")

    def read_until(self, sock: socket.socket, stamped: bool, report_at: float,
                   stop: Stop) -> float | None:
        read_at = ctypes.c_double()
        while not stop.flag:
            status = self._lib.rx_run(self._rx, sock.fileno(), self._wake, int(stamped),
                                      report_at, POLL_S, READ_EVERY_S, ctypes.byref(read_at))
            if status < 0:
                raise OSError(-status, "the C receive loop failed")
            if status == 0:
                return read_at.value
            with contextlib.suppress(BlockingIOError):  # a signal's bytes; its handler has run
                os.read(self._wake, 512)
        return None

    def _view(self, i: int) -> _FlowView:
        view = _FlowView()
        self._lib.rx_flow(self._rx, i, ctypes.byref(view))
        return view

    def count(self) -> int:
        return int(self._lib.rx_count(self._rx))

    def key(self, i: int) -> tuple[str, int]:
        view = self._view(i)
        return _ip_text(view.src), int(view.qpn)

    def first_bin(self, i: int) -> int:
        return int(self._view(i).bin0)

    def bin_bytes(self, i: int, start: int, end: int) -> list[int]:
        if end <= start:
            return []
        out = (ctypes.c_int64 * (end - start))()
        self._lib.rx_bins(self._rx, i, start, end, out)
        return list(out)

    def gaps_from(self, i: int, first: int) -> list[Gap]:
        n = int(self._view(i).n_gaps) - first
        if n <= 0:
            return []
        out = (_Gap * n)()
        self._lib.rx_gaps(self._rx, i, first, n, out)
        return [(g.before, g.after, int(g.lost)) for g in out]

    def summaries(self) -> list[dict]:
        out = []
        for i in range(self.count()):
            v = self._view(i)  # as a FlowRecord, so the summary is said in one place
            out.append(FlowRecord(_ip_text(v.src), int(v.qpn), int(v.packets), int(v.bytes),
                                  int(v.lost), v.first_t, v.last_t,
                                  gaps=self.gaps_from(i, 0)).summary())
        return out


def _ip_number(ip: str) -> int:
    """An IPv4 address as the C side keeps it (network order in memory)."""
    return int.from_bytes(socket.inet_aton(ip), sys.byteorder)


def _ip_text(number: int) -> str:
    return socket.inet_ntoa(number.to_bytes(4, sys.byteorder))


def open_flows(reader: str, t0: float, bin_s: float, gap_s: float) -> PythonFlows | CFlows:
    """The receiver's records: "c" in C, "python" in Python, "auto" in C where it can be
    built."""
    from p4switch.native import NativeUnavailable

    if reader == "python":
        return PythonFlows(t0, bin_s, gap_s)
    try:
        return CFlows(t0, bin_s, gap_s)
    except NativeUnavailable as e:
        if reader == "c":
            raise SystemExit(f"paced recv: the C receive loop cannot be built here: {e}") from None
        return PythonFlows(t0, bin_s, gap_s)


def _report(flows: Flows, now: float, t0: float, bin_s: float, reported: dict[int, int],
            gaps_reported: dict[int, int]) -> None:
    """The `bins` event: each flow's bins completed since the last report, and its silences
    that lost packets and ended `SETTLE_S` ago or more."""
    done = int((now - t0) / bin_s)  # the bin in progress is not reported yet
    out, lossy = {}, {}
    for i in range(flows.count()):
        src, qpn = flows.key(i)
        name = f"{src}/{qpn}"
        start = reported.get(i, flows.first_bin(i))
        out[name] = [[k, n] for k, n in enumerate(flows.bin_bytes(i, start, done), start)]
        reported[i] = done
        first = gaps_reported.get(i, 0)
        gaps = flows.gaps_from(i, first)
        settled = bisect.bisect_right(gaps, now - SETTLE_S, key=lambda g: g[1])
        lossy[name] = [g for g in gaps[:settled] if g[2]]
        gaps_reported[i] = first + settled
    emit("bins", bin_s=bin_s, flows=out, lossy_gaps=lossy)


def receive(t0: float, bin_s: float, gap_s: float, report_s: float,
            reader: str = "auto") -> None:
    """Record every flow arriving on UDP 4791 until SIGTERM, reporting every `report_s`;
    `reader` as `open_flows` takes it."""
    stop = Stop()
    sock, stamped = _stamped_socket()
    reported: dict[int, int] = {}  # flow -> bins below this index were reported
    gaps_reported: dict[int, int] = {}  # flow -> gaps already reported (lossy ones sent)
    with open_flows(reader, t0, bin_s, gap_s) as flows:
        emit("ready")
        next_report = time.time() + report_s
        while (now := flows.read_until(sock, stamped, next_report, stop)) is not None:
            next_report = now + report_s
            _report(flows, now, t0, bin_s, reported, gaps_reported)
        emit("result", flows=flows.summaries())
