"""The switch's data plane with its loop in C (c/switch.c), for `p4switch --pipeline auto|c`.

`CSwitchDataplane` is a Dataplane whose ports are the C side's from the start (CRingPort: the
Python loop, when it runs, reads and writes them through the C functions too) and whose traffic
manager is C's (CTrafficManager). While the installed engine is the C data plane's (CEngine),
the data-plane thread runs c/switch.c's loop without the GIL; it comes back for what Python
does, under the device lock: a state change to copy into C (Device.on_write), a program
installed, packet-outs to inject, frames for the CPU port, digests, a link change. While the
engine is a Python one (a program the C back end does not run), the Python loop serves the
same ports and queues.

Not on this data plane: the PFC watchdog and pause hold (their commands say so), per-packet
trace and pcap capture and groups of switches in one process (process.py picks the Python
data plane for those).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import select
from collections.abc import Callable
from typing import TYPE_CHECKING

from p4switch.switch.dataplane import Dataplane, run_dataplanes
from p4switch.switch.device import Device
from p4switch.switch.linkmon import LinkMonitor
from p4switch.switch.pfc import PauseHold
from p4switch.switch.ports import RawPort

from . import ports, tables, tm
from .build import C_DIR, load_library
from .engine import CEngine
from .pipeline import program_library
from .ports import CPort, CRingPort
from .tables import SOURCES
from .tm import PORTS, CTrafficManager

if TYPE_CHECKING:
    from p4switch.compiler import CompiledProgram

log = logging.getLogger("p4switch.dataplane")
_ptr, _u32 = ctypes.c_void_p, ctypes.c_uint32


class _Stats(ctypes.Structure):
    _fields_ = [("tm_drops", ctypes.c_uint64), ("tx_unknown_port", ctypes.c_uint64),
                ("pfc_frames", ctypes.c_uint64), ("cpu_dropped", ctypes.c_uint64),
                ("passes", ctypes.c_uint64)]


def switch_library() -> ctypes.CDLL:
    """c/switch.c with the engine, traffic manager, ports and tables it calls."""
    lib = load_library("switch", [*SOURCES, *(C_DIR / f for f in (
        "engine.c", "tm.c", "ports.c", "switch.c"))])
    for name, args, res in (
            ("cdp_switch_new", [_ptr, _ptr, ctypes.POINTER(CPort), ctypes.c_int, ctypes.c_int,
                                ctypes.c_double, ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                _u32], _ptr),
            ("cdp_switch_free", [_ptr], None), ("cdp_switch_set_engine", [_ptr, _ptr], None),
            ("cdp_switch_watch", [_ptr, ctypes.c_int], ctypes.c_int),
            ("cdp_switch_note_change", [_ptr], None), ("cdp_switch_run", [_ptr], ctypes.c_int),
            ("cdp_switch_inject", [_ptr, _u32, ctypes.c_char_p, _u32], None),
            ("cdp_switch_cpu_frame", [_ptr, ctypes.c_char_p, _u32], ctypes.c_int64),
            ("cdp_switch_clear_queues", [_ptr], None),
            ("cdp_switch_stats", [_ptr, ctypes.POINTER(_Stats)], None)):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


def build_for(program: CompiledProgram) -> None:
    """Every C library a switch running `program` on this data plane loads, built unless kept
    in the compile cache (`p4switch-compile --c`, `make setup`); CUnsupported or
    NativeUnavailable when it cannot be."""
    program_library(program)
    for library in (switch_library, ports.library, tables.library, tm.library):
        library()


class _NoPauseHold(PauseHold):
    """The pause hold this data plane does not have: `pfc_hold` says so."""

    def set_threshold(self, threshold: int | None) -> None:
        if threshold is not None:
            raise ValueError("no pause hold on the C data plane (p4switch --pipeline auto or c); "
                             "run the switch with --pipeline native for it")


class CSwitchDataplane(Dataplane):
    """A switch's data plane, its loop in C while its program runs on the C data plane."""

    def __init__(self, device: Device, ports: dict[int, RawPort], tm: CTrafficManager,
                 linkmon: LinkMonitor | None, link_bps: Callable[[int], float], pfc: bool):
        self._lib = switch_library()
        numbers = sorted(ports)
        self._cports = (CPort * max(1, len(numbers)))()
        self._index = {n: i for i, n in enumerate(numbers)}
        rings = {n: CRingPort(ports[n], self._cports[i]) for i, n in enumerate(numbers)}
        super().__init__(device, dict(rings), tm, linkmon)  # type: ignore[arg-type]
        self.raw_ports = ports
        self.pause_hold = _NoPauseHold(lambda port, prio: 0, self._pfc_link_bps)
        bps = (ctypes.c_double * PORTS)(*[link_bps(p) if p in ports else 10e9
                                              for p in range(PORTS)])
        cpu = device.cpu_port if device.cpu_port is not None else -1
        self._sw = self._lib.cdp_switch_new(None, tm._tm, self._cports, len(numbers), cpu,
                                            device.start, int(pfc), bps, tm.priority_queues)
        if not self._sw:
            raise OSError("cdp_switch_new failed (out of memory, or a port number beyond 511)")
        for fd in (self._wake_r, *([linkmon.fileno()] if linkmon is not None else [])):
            if self._lib.cdp_switch_watch(self._sw, fd):
                raise OSError(f"cdp_switch_watch({fd}) failed")
        device.on_write(self._state_changed)
        self._generation = device.generation
        # the engine the C loop runs (kept alive); while there is one, the queues hold C items
        # (struct cdp_item), else Python ones
        self._running: CEngine | None = None
        self._frame = ctypes.create_string_buffer(65536 + 16384)

    # -- called from other threads --------------------------------------------------------
    def _on_install(self) -> None:
        """A program was installed: the loop's own thread empties the queues (`_take_over`)."""
        self._state_changed()

    def _state_changed(self) -> None:
        self._lib.cdp_switch_note_change(self._sw)
        self._wake()

    @property
    def stopping(self) -> bool:
        """Also true when a program was installed: `run` takes it over."""
        return self._stopping.is_set() or self.device.generation != self._generation

    def port_counters(self, port: int) -> dict[str, int]:
        """The port's frames and bytes as C counts them, and the kernel's drops."""
        c = self._cports[self._index[port]]
        raw = self.raw_ports[port]
        return {"rx_packets": c.rx_packets, "rx_bytes": c.rx_bytes, "tx_packets": c.tx_packets,
                "tx_bytes": c.tx_bytes, "tx_errors": c.tx_errors,
                "rx_dropped": raw.kernel_drops() + c.truncated}

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> None:
        while not self._stopping.is_set():
            with self.device.lock:
                engine = self._take_over()
                if isinstance(engine, CEngine):
                    try:
                        self._python_side(engine)
                    except Exception:  # a bug here must not stop the switch's packets
                        self.stats.engine_errors += 1
                        log.exception("data plane: the C loop's Python side failed")
            if not isinstance(engine, CEngine):
                run_dataplanes([self])  # until stopped, or a program installed
                continue
            err = self._lib.cdp_switch_run(self._sw)  # without the GIL
            if err:
                raise OSError(-err, f"the C data-plane loop failed: {os.strerror(-err)}")

    def _take_over(self):
        """The installed engine, its queues set up for it (emptied when it is new)."""
        engine = self.device.engine
        if self.device.generation != self._generation:
            self._generation = self.device.generation
            if self._running is not None:
                self._lib.cdp_switch_clear_queues(self._sw)
            self.tm.clear()
            self._running = None
            self._lib.cdp_switch_set_engine(self._sw, None)
        if isinstance(engine, CEngine) and engine is not self._running:
            self._lib.cdp_switch_set_engine(self._sw, engine.address)
            self._running = engine
        return engine

    def _python_side(self, engine: CEngine) -> None:
        """What the C loop came back for: the state copied, the wake-up pipe and the link
        monitor read, packet-outs injected, frames for the CPU port delivered."""
        engine.current()
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass
        if self.linkmon is not None and select.select([self.linkmon], [], [], 0)[0]:
            self.linkmon.handle()
            engine.current()  # selectors follow the ports
        while self._injected:
            port, data = self._injected.popleft()
            self._lib.cdp_switch_inject(self._sw, port, data, len(data))
        engine.hand_over_digests()
        frame = self._frame
        while (n := self._lib.cdp_switch_cpu_frame(self._sw, frame, len(frame))) >= 0:
            if self.packet_in is not None:
                self.packet_in(frame.raw[:n])

    def loop_stats(self) -> dict[str, int]:
        """What the C loop counted: tm_drops, tx_unknown_port, pfc_frames, cpu_dropped,
        passes."""
        s = _Stats()
        self._lib.cdp_switch_stats(self._sw, ctypes.byref(s))
        return {name: getattr(s, name) for name, *_ in _Stats._fields_}

    def close(self) -> None:
        if self._sw:
            if self._running is not None:
                self._lib.cdp_switch_clear_queues(self._sw)
            self._lib.cdp_switch_free(self._sw)
            self._sw = None
        super().close()
