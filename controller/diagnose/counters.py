"""The switches' port counters and queue pause state, read over each switch's runtime CLI (both
targets; no P4Runtime session, so a running controller stays primary undisturbed).

A `Snapshot` holds, per switch and port, the packets received and sent (`port_io.p4`'s
`rx_port_counter`, `tx_port_counter`) and the PFC frames received (`pfc.p4`'s `pfc_rx_counter`);
on targets whose traffic manager reports it (`Capabilities.reports_tm_stats`: p4switch), whether
each port's queue of the lossless class is paused now and how deep it is.

    with PortReader(spec, target) as reader:
        before = reader.snapshot()
        ...
        after = reader.snapshot()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from experiments.framework.telemetry import read_telemetry
from mechanisms import pfc, port_io
from targets import RuntimeCli, RuntimeCliError, Target, get_target
from topos.errors import FabricLabError
from topos.model import FabricSpec

ITEMS = (port_io.RX_PACKETS, port_io.TX_PACKETS, pfc.PFC_RX)
DATA_PRIORITY = pfc.ROCE_CLASSES[26]  # RoCE data's lossless class, where pauses matter
Port = tuple[str, int]  # (switch, port)
T = TypeVar("T")


class TelemetryMissing(FabricLabError, RuntimeError):
    """A switch that cannot be read, or a program without the counters diagnose needs."""


@dataclass
class Snapshot:
    t: float
    rx: dict[Port, int] = field(default_factory=dict)
    tx: dict[Port, int] = field(default_factory=dict)
    pfc_rx: dict[Port, int] = field(default_factory=dict)
    paused: dict[Port, bool] = field(default_factory=dict)  # empty without TM stats
    depth: dict[Port, int] = field(default_factory=dict)


class PortReader:
    """Runtime-CLI channels to every switch of a fabric; `snapshot()` reads them in parallel."""

    def __init__(self, spec: FabricSpec, target: Target | str, timeout: float = 10.0) -> None:
        self.spec, self.target = spec, get_target(target)
        self.ports = {sw.name: sorted(ln.end(sw.name).port for ln in spec.links_of(sw.name))
                      for sw in spec.switches}
        self.channels: dict[str, RuntimeCli] = {
            sw.name: self.target.cli(sw.thrift_port, timeout) for sw in spec.switches}
        self.tm_stats = self.target.caps.reports_tm_stats
        self.priority: dict[str, int] = {}  # per switch: the queue the data class waits in

    def _read(self, switch: str, counters: bool = True) -> Snapshot:
        channel, ports = self.channels[switch], self.ports[switch]
        out = Snapshot(time.time())
        try:
            values = read_telemetry(channel, ITEMS if counters else (), ports)
        except RuntimeCliError as err:
            raise TelemetryMissing(f"{switch}: cannot read its port counters over the "
                                   f"{self.target.name} runtime CLI ({err}); is the fabric "
                                   f"running, and on that target (--target)?") from None
        except ValueError as err:
            raise TelemetryMissing(f"{switch}: its program lacks what diagnose reads "
                                   f"(port_io.p4 and pfc.p4 counters): {err}") from None
        for port in ports:
            if counters:
                out.rx[(switch, port)] = values[port_io.RX_PACKETS.key][port]
                out.tx[(switch, port)] = values[port_io.TX_PACKETS.key][port]
                out.pfc_rx[(switch, port)] = values[pfc.PFC_RX.key][port]
            if self.tm_stats:
                stats = self._queue_stats(switch, port)
                out.paused[(switch, port)] = bool(stats["paused"])
                out.depth[(switch, port)] = int(stats["depth"])
        return out

    def _queue_stats(self, switch: str, port: int) -> dict[str, int | bool]:
        """The data class's queue; a switch of one queue per port holds every class in it."""
        prio = self.priority.get(switch, DATA_PRIORITY)
        try:
            stats = self.channels[switch].queue_stats(port, prio)
        except RuntimeCliError as err:
            if prio == 0 or "out of range" not in str(err):
                raise
            self.priority[switch] = prio = 0
            stats = self.channels[switch].queue_stats(port, prio)
        self.priority.setdefault(switch, prio)
        return stats

    def snapshot(self, counters: bool = True) -> Snapshot:
        """Every switch's counters (without `counters`: only the pause state), read in
        parallel; `t` is when the reads started."""
        started = time.time()
        with ThreadPoolExecutor(max_workers=min(8, len(self.channels) or 1)) as pool:
            parts = list(pool.map(lambda sw: self._read(sw, counters), self.channels))
        out = Snapshot(started)
        for part in parts:
            for name in ("rx", "tx", "pfc_rx", "paused", "depth"):
                getattr(out, name).update(getattr(part, name))
        return out

    def close(self) -> None:
        for channel in self.channels.values():
            channel.close()

    def __enter__(self) -> PortReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PauseSampler:
    """Pause state sampled every `interval_s` while something else runs: per port, the samples
    that found its data queue paused (targets with TM stats only)."""

    def __init__(self, reader: PortReader, interval_s: float = 0.25) -> None:
        self.reader, self.interval_s = reader, interval_s
        self.samples = 0
        self.paused: dict[Port, int] = {}
        self.depth_max: dict[Port, int] = {}

    def add(self, snap: Snapshot) -> None:
        if not snap.paused:
            return
        self.samples += 1
        for port, paused in snap.paused.items():
            self.paused[port] = self.paused.get(port, 0) + int(paused)
            self.depth_max[port] = max(self.depth_max.get(port, 0), snap.depth.get(port, 0))

    def during(self, work: Callable[[], T]) -> T:
        """Run `work()` while sampling on a thread of its own; its result."""
        if not self.reader.tm_stats:
            return work()
        done = threading.Event()

        def loop() -> None:
            while not done.wait(self.interval_s):
                try:
                    self.add(self.reader.snapshot(counters=False))
                except (TelemetryMissing, RuntimeCliError):
                    return

        thread = threading.Thread(target=loop, name="diagnose-pauses", daemon=True)
        thread.start()
        try:
            return work()
        finally:
            done.set()
            thread.join(10)
