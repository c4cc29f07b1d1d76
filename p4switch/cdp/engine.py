"""The switch's engine on the C data plane: Engine's interface (ingress, egress_frame, egress,
process, internal_errors), which the data-plane loop (p4switch/switch/dataplane.py) calls, over
a CPipeline.

Registers and counters are one memory for the runtime and C (`CPipeline`). Tables, action
profiles, the PRE and the ports' states are copied into C when the runtime has changed since
the last copy: `changes()` counts the device's writes (P4Runtime, the runtime CLI, link
changes), and every packet compares it first, under the device lock the writers hold too.
Direct counters count in C; `publish` copies them to the runtime's entries, which the device
calls before every read and every write of the control plane.

What it does not do: trace packets or print log_msg() (a switch that logs runs the Python
pipeline), and whatever the C back end refuses (CUnsupported).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from p4switch.compiler import CompiledProgram
from p4switch.engine import EngineConfig
from p4switch.runtime import RuntimeState

from .pipeline import CItem, CPipeline


class CEngine:
    """Engine's interface for the switch, on the C data plane."""

    pipeline = "c"

    def __init__(self, program: CompiledProgram, state: RuntimeState, config: EngineConfig,
                 changes: Callable[[], int], origin: float | None = None) -> None:
        self.state = state
        self.config = config
        self._c = CPipeline(program, state, config, copy_each_packet=False, origin=origin)
        self._changes = changes
        self._copied: int | None = None

    def current(self) -> None:
        """The C copy of the tables made current, if the runtime changed since."""
        seen = self._changes()
        if seen != self._copied:
            self._c.sync()
            self._copied = seen

    def publish(self) -> None:
        """The direct counters of the runtime's entries := C's (before the control plane reads
        or writes them: Device.publish, Device.note_write)."""
        self._c.write_back()

    def hand_over_digests(self) -> None:
        """The digests the C loop's packets sent, to the runtime."""
        self._c.hand_over_digests()

    @property
    def address(self) -> int:
        """The C engine (struct cdp_engine *), for the C loop (c/switch.c)."""
        return self._c.engine_address

    @property
    def internal_errors(self) -> int:
        return self._c.internal_errors

    def ingress(self, port: int, data: bytes) -> list[CItem]:
        self.current()
        return self._c.ingress(port, data)

    def egress_frame(self, item: CItem, enq_timestamp: int = 0, enq_qdepth: int = 0,
                     deq_qdepth: int = 0, deq_timedelta: int = 0
                     ) -> tuple[bytes | None, Sequence[CItem]]:
        self.current()
        frames, more = self._c.egress(item, enq_timestamp, enq_qdepth, deq_qdepth,
                                      deq_timedelta)
        return (frames[0][1] if frames else None), more

    def egress(self, item: CItem, enq_timestamp: int = 0, enq_qdepth: int = 0,
               deq_qdepth: int = 0, deq_timedelta: int = 0
               ) -> tuple[list[tuple[int, bytes]], list[CItem]]:
        self.current()
        return self._c.egress(item, enq_timestamp, enq_qdepth, deq_qdepth, deq_timedelta)

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        self.current()
        return self._c.process(port, data)
