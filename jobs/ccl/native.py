"""The C engine (jobs/ccl/c/) loaded with ctypes: the structs of ccl.h, field by field, and
their layout checked against the library's own (`ccl_layout`) when it loads.

    lib = library()                      # built once and kept in the compile cache
    cfg = Config(rank=0, nranks=2, ...)
"""

from __future__ import annotations

import ctypes
from functools import cache
from pathlib import Path

from topos.errors import FabricLabError

C_DIR = Path(__file__).resolve().parent / "c"
SOURCES = ("engine.c", "fabric.c", "nvlink.c", "wire.c", "data.c")
ABI = 1
MAX_PORTS = 4

SEND, RECV, COPY, COMPUTE = 1, 2, 3, 4
REDUCE, POSTOP = 1, 2
TX, RX = 0, 1
FABRIC, NVLINK = 0, 1
INIT, CHECK, RECORD = 1, 2, 4
DONE, TIMEOUT, STOPPED, FAILED = 0, 1, 2, 3
IDLE, ARMED, RUNNING, FINISHED = 0, 1, 2, 3
STATUS = {DONE: "done", TIMEOUT: "timed out", STOPPED: "stopped", FAILED: "failed"}

u8, u16, u32, u64, i32 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32


class EngineError(FabricLabError, RuntimeError):
    """The engine refused a plan or a run, or cannot be built here."""


class Port(ctypes.Structure):
    _fields_ = [("fd", i32), ("tx_fd", i32), ("rate_bps", ctypes.c_double), ("mac", u8 * 6),
                ("pad", u8 * 2)]


class Peer(ctypes.Structure):
    _fields_ = [("ip", u32), ("nvlink_fd", i32), ("mac", u8 * 6), ("pad", u8 * 2)]


class Config(ctypes.Structure):
    _fields_ = [("rank", u32), ("nranks", u32), ("nports", u32), ("mtu", u32), ("ip", u32),
                ("credits", u32), ("ack_every", u32), ("max_retries", u32),
                ("rto_s", ctypes.c_double), ("nvlink_bps", ctypes.c_double), ("dscp", u32),
                ("prio", u32), ("stop_fd", i32), ("pad", u32), ("ports", Port * MAX_PORTS)]


class Conn(ctypes.Structure):
    _fields_ = [("qpn", u32), ("peer", u16), ("dir", u8), ("transport", u8), ("port", u8),
                ("pad", u8), ("sport", u16), ("fifo_at", u32), ("nfifo", u32)]


class Op(ctypes.Structure):
    _fields_ = [("kind", u8), ("flags", u8), ("conn", u16), ("step", u32), ("src", u64),
                ("dst", u64), ("len", u64), ("match", u32), ("ndeps", u32), ("succ_at", u32),
                ("nsucc", u32)]


class Expect(ctypes.Structure):
    _fields_ = [("out", u64), ("count", u64), ("src", u64), ("contrib_at", u32),
                ("ncontrib", u32), ("reduce", u32), ("pad", u32)]


class Plan(ctypes.Structure):
    _fields_ = [("nops", u32), ("nconns", u32), ("nsucc", u32), ("nfifo", u32),
                ("nexpect", u32), ("ncontrib", u32), ("dtype", u32), ("redop", u32),
                ("group", u32), ("pad", u32), ("arena_at", ctypes.c_void_p), ("arena", u64),
                ("in_", u64), ("in_count", u64),
                ("out", u64), ("out_count", u64), ("conns", ctypes.POINTER(Conn)),
                ("ops", ctypes.POINTER(Op)), ("succ", ctypes.POINTER(u32)),
                ("fifo", ctypes.POINTER(u32)), ("expect", ctypes.POINTER(Expect)),
                ("contrib", ctypes.POINTER(u32))]


class Run(ctypes.Structure):
    _fields_ = [("plan", u32), ("iterations", u32), ("run_id", u32), ("flags", u32),
                ("seed", u64), ("timeout_s", ctypes.c_double)]


STAT_NAMES = ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "acks_sent", "acks_received",
              "retransmits", "naks_sent", "naks_received", "timeouts", "icrc_errors",
              "seq_errors", "duplicates", "ecn_marked", "bad_frames", "pfc_frames", "paused_ns",
              "tx_busy", "credit_waits", "staged", "nvlink_tx_bytes", "nvlink_rx_bytes",
              "wakeups")


class Stats(ctypes.Structure):
    _fields_ = [*((name, u64) for name in STAT_NAMES), ("port_tx_bytes", u64 * MAX_PORTS),
                ("port_rx_bytes", u64 * MAX_PORTS)]

    def as_dict(self) -> dict[str, int | list[int]]:
        out: dict[str, int | list[int]] = {name: int(getattr(self, name)) for name in STAT_NAMES}
        out["port_tx_bytes"] = list(self.port_tx_bytes)
        out["port_rx_bytes"] = list(self.port_rx_bytes)
        return out


class Result(ctypes.Structure):
    _fields_ = [("status", i32), ("iterations", u32), ("start_ns", u64), ("end_ns", u64),
                ("wrong", u64), ("pending", u64), ("stats", Stats), ("error", ctypes.c_char * 200)]


# The order ccl_layout() lists them in, and the fields whose offsets it gives (by C name).
LAYOUT: list[tuple[type[ctypes.Structure], tuple[str, ...]]] = [
    (Port, ("fd", "tx_fd", "rate_bps", "mac")),
    (Peer, ("ip", "nvlink_fd", "mac")),
    (Config, ("rank", "nranks", "nports", "mtu", "ip", "credits", "ack_every", "max_retries",
              "rto_s", "nvlink_bps", "dscp", "prio", "stop_fd", "ports")),
    (Conn, ("qpn", "peer", "dir", "transport", "port", "sport", "fifo_at", "nfifo")),
    (Op, ("kind", "flags", "conn", "step", "src", "dst", "len", "match", "ndeps", "succ_at",
          "nsucc")),
    (Expect, ("out", "count", "src", "contrib_at", "ncontrib", "reduce")),
    (Plan, ("nops", "nconns", "nsucc", "nfifo", "nexpect", "ncontrib", "dtype", "redop",
            "group", "arena_at", "arena", "in_", "in_count", "out", "out_count", "conns", "ops",
            "succ",
            "fifo", "expect", "contrib")),
    (Run, ("plan", "iterations", "run_id", "flags", "seed", "timeout_s")),
    (Stats, ("tx_packets", "port_tx_bytes", "port_rx_bytes")),
    (Result, ("status", "iterations", "start_ns", "end_ns", "wrong", "pending", "stats",
              "error")),
]


def expected_layout() -> list[int]:
    """The layout as the Python mirrors have it, in ccl_layout()'s form."""
    out: list[int] = []
    for struct, names in LAYOUT:
        out.append(ctypes.sizeof(struct))
        out += [getattr(struct, name).offset for name in names]
        out.append(2 ** 64 - 1)
    return out


def check_layout(lib: ctypes.CDLL) -> None:
    n = lib.ccl_layout(None, 0)
    got = (u64 * n)()
    lib.ccl_layout(got, n)
    want = expected_layout()
    if list(got) != want:
        raise EngineError(f"jobs/ccl/c/ccl.h and jobs/ccl/native.py disagree on a struct "
                          f"layout: C {list(got)}, Python {want}")


@cache
def library() -> ctypes.CDLL:
    """The engine, built once per content and compiler (EngineError where it cannot be)."""
    from p4switch.cdp.build import load_library
    from p4switch.native import NativeUnavailable

    try:
        lib = load_library("ccl", [C_DIR / name for name in SOURCES])
    except NativeUnavailable as e:
        raise EngineError(f"the collective engine cannot be built here: {e}") from None
    lib.ccl_abi.restype = ctypes.c_int
    if lib.ccl_abi() != ABI:
        raise EngineError(f"the collective engine speaks ABI {lib.ccl_abi()}, not {ABI}")
    lib.ccl_layout.argtypes = [ctypes.POINTER(u64), ctypes.c_size_t]
    lib.ccl_layout.restype = ctypes.c_size_t
    check_layout(lib)
    vp = ctypes.c_void_p
    lib.ccl_new.argtypes = [ctypes.POINTER(Config), ctypes.POINTER(Peer), ctypes.c_char_p,
                            ctypes.c_size_t]
    lib.ccl_new.restype = vp
    lib.ccl_start.argtypes = [vp]
    lib.ccl_load.argtypes = [vp, ctypes.POINTER(Plan), ctypes.c_char_p, ctypes.c_size_t]
    lib.ccl_unload.argtypes = [vp, u32]
    lib.ccl_arm.argtypes = [vp, ctypes.POINTER(Run), ctypes.POINTER(u64), ctypes.POINTER(u64)]
    lib.ccl_go.argtypes = [vp, u64]
    lib.ccl_event_fd.argtypes = [vp]
    lib.ccl_state.argtypes = [vp]
    lib.ccl_result.argtypes = [vp, ctypes.POINTER(Result)]
    lib.ccl_attach.argtypes = [vp, u32, u32, vp, u64]
    lib.ccl_totals.argtypes = [vp, ctypes.POINTER(Stats)]
    lib.ccl_free.argtypes = [vp]
    lib.ccl_free.restype = None
    lib.ccl_send_allowance.argtypes = [i32, ctypes.c_double, u32]
    lib.ccl_send_allowance.restype = ctypes.c_double
    return lib


def send_allowance(transport: int, rate_bps: float, mtu: int) -> float:
    """The bytes a port (FABRIC) or NVLink sender may send beyond rate x t in any time t
    (ccl.h's ccl_send_allowance)."""
    return float(library().ccl_send_allowance(transport, rate_bps, mtu))


if __name__ == "__main__":  # `python -m jobs.ccl.native`: build the engine now (make setup)
    try:
        library()
    except EngineError as err:
        raise SystemExit(f"jobs.ccl: {err}") from None
