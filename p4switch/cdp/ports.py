"""The C data plane's ports: p4switch's RawPorts (their sockets and PACKET_MMAP rings, set up
by p4switch/switch/ports.py) handed to the C code of c/ports.c, which then owns their rings.

`CRingPort` does a RawPort's I/O through the C functions (the tests run the ring tests of
p4switch/switch/ports.py on it); `forward` runs the C loop."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from p4switch.cdp.build import C_DIR, load_library
from p4switch.switch.ports import RawPort

BATCH = 64  # frames read from one port per call, as RawPort.recv_batch
_BUF = 65536  # CDP_MAX_FRAME


class CPort(ctypes.Structure):
    """struct cdp_port (c/ports.h)."""

    _fields_ = [
        ("number", ctypes.c_int), ("fd", ctypes.c_int), ("direct_fd", ctypes.c_int),
        ("rx", ctypes.c_void_p), ("rx_slots", ctypes.c_uint32), ("rx_head", ctypes.c_uint32),
        ("tx", ctypes.c_void_p), ("tx_slots", ctypes.c_uint32), ("tx_head", ctypes.c_uint32),
        ("tx_pending", ctypes.c_uint32), ("tx_max_len", ctypes.c_uint32),
        ("rx_packets", ctypes.c_uint64), ("rx_bytes", ctypes.c_uint64),
        ("tx_packets", ctypes.c_uint64), ("tx_bytes", ctypes.c_uint64),
        ("tx_errors", ctypes.c_uint64), ("truncated", ctypes.c_uint64),
        ("slot", ctypes.c_uint32),
    ]


def library() -> ctypes.CDLL:
    """c/ports.c, built once per content and compiler (NativeUnavailable: no compiler)."""
    lib = load_library("ports", [C_DIR / "ports.c"])
    port_p, buf = ctypes.POINTER(CPort), ctypes.c_char_p
    lib.cdp_forward_loop.argtypes = [port_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                     ctypes.c_int]
    lib.cdp_port_receive.argtypes = [port_p, ctypes.c_void_p, ctypes.c_uint32]
    lib.cdp_port_send.argtypes = [port_p, buf, ctypes.c_uint32]
    lib.cdp_port_flush.argtypes = [port_p]
    lib.cdp_port_flush.restype = None
    return lib


def c_port(port: RawPort, into: CPort | None = None) -> CPort:
    """The C view of `port` (ValueError without both rings), its rings taken over where the
    port left them. From here on only the C side may touch them."""
    layout = port.ring_layout
    if layout is None:
        raise ValueError(f"port {port.number} ({port.iface}) has no PACKET_MMAP rings")
    c = into if into is not None else CPort()
    c.number, c.fd, c.direct_fd = port.number, port.fileno(), layout.direct_fd
    c.rx, c.rx_slots, c.tx, c.tx_slots = layout.rx, layout.rx_slots, layout.tx, layout.tx_slots
    c.tx_max_len, c.rx_head, c.tx_head = layout.tx_max_len, layout.rx_head, layout.tx_head
    c.slot = layout.slot
    return c


class CRingPort:
    """A RawPort's frames received, sent and flushed by the C code; its counters are the C
    side's (`c`)."""

    def __init__(self, port: RawPort, into: CPort | None = None):
        """`into`: the struct cdp_port to fill (an element of the C loop's array)."""
        self.port = port
        self.number = port.number
        self.c = c_port(port, into)
        self._lib = library()
        self._buf = ctypes.create_string_buffer(_BUF)

    def fileno(self) -> int:
        return self.port.fileno()

    @property
    def counters(self) -> CPort:
        """rx_packets, rx_bytes, tx_packets, tx_bytes, tx_errors, truncated, as C counts them."""
        return self.c

    def recv_batch(self, limit: int = BATCH) -> list[bytes]:
        frames: list[bytes] = []
        receive, buf = self._lib.cdp_port_receive, self._buf
        for _ in range(limit):
            n = receive(ctypes.byref(self.c), buf, _BUF)
            if n == 0:
                break
            if n > 0:
                frames.append(buf.raw[:n])
        return frames

    def send(self, frame: bytes) -> bool:
        return bool(self._lib.cdp_port_send(ctypes.byref(self.c), frame, len(frame)))

    def flush(self) -> None:
        self._lib.cdp_port_flush(ctypes.byref(self.c))

    def close(self) -> None:
        self.port.close()


def forward(ports: Sequence[RawPort], out_of: dict[int, int], stop_fd: int
            ) -> ctypes.Array[CPort]:
    """Forward every frame received on port p to port out_of[p] (dropped if p has none)
    until `stop_fd` is readable, in C; returns the ports' C views with their counters."""
    lib = library()
    array = (CPort * len(ports))()
    for c, port in zip(array, ports, strict=True):
        c_port(port, c)
    index = {port.number: i for i, port in enumerate(ports)}
    out_index = (ctypes.c_int * len(ports))(*(
        index.get(out_of.get(port.number, -1), -1) for port in ports))
    err = lib.cdp_forward_loop(array, len(ports), out_index, stop_fd)  # the GIL is released
    if err:
        raise OSError(-err, f"the C forwarding loop failed: errno {-err}")
    return array
