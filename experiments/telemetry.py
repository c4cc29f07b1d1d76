"""Per-queue telemetry sampled from the switches while an experiment runs, as a time series.

Every `interval_s` (100 ms by default) and for each watched (switch, port, priority):
- from the P4 program, on both targets (runtime CLI `register_read` / `counter_read`):
  `depth_max` (deepest enqueue since the previous sample; the register is zeroed after reading),
  `depth_last` (what the last departing packet left behind), `delay_max_us`, `tx_packets`
  (`tx_port_counter`), `ecn_marked`, `pfc_tx` / `pfc_xoff_tx` (frames sent out of the port),
  `pfc_rx` (frames received on it);
- from p4switch's traffic manager (p4switch-only, empty on BMv2): `depth` now, `dropped`
  (tail drops), `paused` now, and `paused_s`, the paused time accumulated at sample resolution.
Counters are cumulative; the plots difference them.

    sampler = TelemetrySampler(channels, [("leaf1", 1, 3)], target="p4switch").start()
    ...
    sampler.stop(); rows = sampler.rows
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from controller.pfc_agent import RuntimeChannel, RuntimeChannelError

COLUMNS = ["t_s", "switch", "port", "priority", "depth", "depth_max", "depth_last",
           "delay_max_us", "dropped", "tx_packets", "ecn_marked", "pfc_tx", "pfc_xoff_tx",
           "pfc_rx", "paused", "paused_s"]

REGISTERS = {"depth_max": "FabricEgress.telemetry.queue_depth_max",
             "depth_last": "FabricEgress.telemetry.queue_depth_last",
             "delay_max_us": "FabricEgress.telemetry.queue_delay_max"}
COUNTERS = {"tx_packets": "FabricEgress.port_io.tx_port_counter",
            "ecn_marked": "FabricEgress.ecn.ecn_marked_counter",
            "pfc_tx": "FabricEgress.pfc.pfc_tx_counter",
            "pfc_xoff_tx": "FabricEgress.pfc.pfc_xoff_counter",
            "pfc_rx": "FabricIngress.pfc_reception.pfc_rx_counter"}
_RESET_AFTER_READ = ("depth_max", "delay_max_us")
_PACKETS_RE = re.compile(r"(\d+) packets|packets=(\d+)")  # p4switch | BMv2 output


def telemetry_cell(port: int, priority: int) -> int:
    """Register cell of a queue in telemetry.p4."""
    return (port & 63) << 3 | priority


@dataclass
class TelemetrySampler:
    channels: Mapping[str, RuntimeChannel]
    queues: Iterable[tuple[str, int, int]]  # (switch, port, priority)
    target: str = "p4switch"
    interval_s: float = 0.1
    rows: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queues = list(self.queues)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._paused_s: dict[tuple[str, int, int], float] = {}
        self.t0 = time.time()

    def sample(self) -> list[dict]:
        """One row per watched queue, now."""
        now = time.time()
        out = []
        for switch, port, prio in self.queues:
            ch = self.channels[switch]
            row: dict = {"t_s": round(now - self.t0, 4), "switch": switch, "port": port,
                         "priority": prio}
            cell = telemetry_cell(port, prio)
            for key, name in REGISTERS.items():
                text = ch.command(f"register_read {name} {cell}")
                row[key] = int(text.rsplit("=", 1)[1])
                if key in _RESET_AFTER_READ:
                    ch.command(f"register_write {name} {cell} 0")
            for key, name in COUNTERS.items():
                match = _PACKETS_RE.search(ch.command(f"counter_read {name} {port}"))
                row[key] = int(match.group(1) or match.group(2)) if match else 0
            if self.target == "p4switch":
                stats = ch.queue_stats(port, prio)
                key = (switch, port, prio)
                if stats["paused"]:
                    self._paused_s[key] = self._paused_s.get(key, 0.0) + self.interval_s
                row.update(depth=stats["depth"], dropped=stats["dropped"],
                           paused=int(bool(stats["paused"])),
                           paused_s=round(self._paused_s.get(key, 0.0), 3))
            out.append(row)
        self.rows.extend(out)
        return out

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                self.sample()
            except (RuntimeChannelError, OSError, ValueError) as err:
                self.errors.append(str(err))
            next_t += self.interval_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def start(self) -> TelemetrySampler:
        self.t0 = time.time()
        self._thread = threading.Thread(target=self._run, name="telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[dict]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        return self.rows
