"""Per-queue telemetry sampled from the switches while an experiment runs, as a time series.

Every `interval_s` (100 ms by default) and for each watched (switch, port, priority):
- from the P4 program, on both targets (runtime CLI `register_read` / `counter_read`; the
  names and cells are the mechanisms' telemetry, `mechanisms.telemetry_items()`):
  `depth_max` (deepest enqueue since the previous sample; the register is zeroed after reading),
  `depth_last` (what the last departing packet left behind), `delay_max_us`, `tx_packets`
  (`tx_port_counter`), `ecn_marked`, `pfc_tx` / `pfc_xoff_tx` (frames sent out of the port),
  `pfc_rx` (frames received on it);
- from the traffic manager, on targets that report it (`Capabilities.reports_tm_stats`:
  p4switch; empty on BMv2): `depth` now, `dropped` (tail drops), `paused` now, and `paused_s`,
  the paused time accumulated at sample resolution.
Counters are cumulative; the plots difference them. Each sample is one batch of commands per
switch over its runtime-CLI client (`Target.cli`): on p4switch a sample of four queues takes
~10 ms; on BMv2 the batch goes to a long-lived `simple_switch_CLI` (~5 ms for four queues on
three switches).

    sampler = TelemetrySampler(clis, [("leaf1", 1, 3)], target=P4SWITCH).start()
    ...
    sampler.stop(); rows = sampler.rows

Any mechanism's telemetry reads the same way, once: `read_telemetry(channel, items, cells)`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.periodic import Periodic
from mechanisms import Telemetry, telemetry_items
from mechanisms.telemetry import queue_cell
from targets import P4SWITCH, RuntimeCli, RuntimeCliError, Target

COLUMNS = ["t_s", "switch", "port", "priority", "depth", "depth_max", "depth_last",
           "delay_max_us", "dropped", "tx_packets", "ecn_marked", "pfc_tx", "pfc_xoff_tx",
           "pfc_rx", "paused", "paused_s"]

_ITEMS = telemetry_items()
# What a sample reads: queue registers by queue cell, port counters by port (CSV column -> name).
REGISTERS = {key: _ITEMS[key].p4_name for key in ("depth_max", "depth_last", "delay_max_us")}
COUNTERS = {key: _ITEMS[key].p4_name
            for key in ("tx_packets", "ecn_marked", "pfc_tx", "pfc_xoff_tx", "pfc_rx")}
_REGISTER_ITEMS = [_ITEMS[key] for key in REGISTERS]
_PACKETS_RE = re.compile(r"(\d+) packets|packets=(\d+)")  # p4switch | BMv2 output
_VALUE_RE = re.compile(r"([\w.]+\[\d+\])=\s*(.*)")


def telemetry_cell(port: int, priority: int) -> int:
    """Register cell of a queue in telemetry.p4."""
    return queue_cell(port, priority)


def read_commands(items: Iterable[Telemetry], cells: Iterable[int]) -> list[str]:
    """Runtime-CLI reads of every cell of every item (`counter_read` / `register_read`)."""
    cells = list(cells)
    return [f"{item.kind}_read {item.p4_name} {cell}" for item in items for cell in cells]


def reset_commands(items: Iterable[Telemetry], cells: Iterable[int]) -> list[str]:
    """Runtime-CLI writes that zero every cell of the items a read resets (`reset_after_read`)."""
    cells = list(cells)
    return [f"register_write {item.p4_name} {cell} 0" for item in items
            if item.reset_after_read for cell in cells]


def read_telemetry(channel: RuntimeCli, items: Sequence[Telemetry],
                   cells: Iterable[int]) -> dict[str, dict[int, int]]:
    """Item key -> cell -> value (packets for counters) of a switch, in one runtime-CLI batch;
    a ValueError names the first cell the output lacks."""
    cells = list(cells)
    values = parse_cli_values(channel.batch(read_commands(items, cells)))
    out: dict[str, dict[int, int]] = {}
    for item in items:
        for cell in cells:
            key = f"{item.p4_name}[{cell}]"
            if key not in values:
                raise ValueError(f"no value for {key} in the runtime CLI output")
            out.setdefault(item.key, {})[cell] = values[key]
    return out


def _commands(queues: list[tuple[int, int]]) -> list[str]:
    """Reads of every register and counter of the queues, then the resets."""
    reads, resets = [], []
    for port, prio in queues:
        cell = telemetry_cell(port, prio)
        reads += [f"register_read {name} {cell}" for name in REGISTERS.values()]
        reads += [f"counter_read {name} {port}" for name in COUNTERS.values()]
        resets += reset_commands(_REGISTER_ITEMS, [cell])
    return reads + resets


def parse_cli_values(output: str) -> dict[str, int]:
    """`name[index]` -> value (registers) or packet count (counters) from runtime-CLI output,
    p4switch's (`(B bytes, P packets)`) or BMv2's (`BmCounterValue(packets=P, bytes=B)`)."""
    values = {}
    for match in _VALUE_RE.finditer(output):
        text = match.group(2)
        packets = _PACKETS_RE.search(text)
        if packets:
            values[match.group(1)] = int(packets.group(1) or packets.group(2))
        elif text.strip().lstrip("-").isdigit():
            values[match.group(1)] = int(text)
    return values


@dataclass
class TelemetrySampler:
    channels: Mapping[str, RuntimeCli]
    queues: Iterable[tuple[str, int, int]]  # (switch, port, priority)
    target: Target = P4SWITCH
    interval_s: float = 0.1
    rows: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queues = list(self.queues)
        self._loop = Periodic("telemetry", self.interval_s, self.sample, immediate=True,
                              errors=(RuntimeCliError, OSError, ValueError),
                              on_error=lambda err: self.errors.append(str(err)))
        self._paused_s: dict[tuple[str, int, int], float] = {}
        self.t0 = time.time()

    def sample(self) -> list[dict]:
        """One row per watched queue, now. One batch of runtime-CLI commands per switch."""
        now = time.time()
        out = []
        by_switch: dict[str, list[tuple[int, int]]] = {}
        for switch, port, prio in self.queues:
            by_switch.setdefault(switch, []).append((port, prio))
        for switch, queues in by_switch.items():
            ch = self.channels[switch]
            values = parse_cli_values(ch.batch(_commands(queues)))
            for port, prio in queues:
                cell = telemetry_cell(port, prio)
                row: dict = {"t_s": round(now - self.t0, 4), "switch": switch, "port": port,
                             "priority": prio}
                for key, name in REGISTERS.items():
                    row[key] = values.get(f"{name}[{cell}]", 0)
                for key, name in COUNTERS.items():
                    row[key] = values.get(f"{name}[{port}]", 0)
                if self.target.caps.reports_tm_stats:
                    row.update(self._tm_stats(ch, switch, port, prio))
                out.append(row)
        self.rows.extend(out)
        return out

    def _tm_stats(self, ch: RuntimeCli, switch: str, port: int, prio: int) -> dict:
        stats = ch.queue_stats(port, prio)
        key = (switch, port, prio)
        if stats["paused"]:
            self._paused_s[key] = self._paused_s.get(key, 0.0) + self.interval_s
        return {"depth": stats["depth"], "dropped": stats["dropped"],
                "paused": int(bool(stats["paused"])),
                "paused_s": round(self._paused_s.get(key, 0.0), 3)}

    def start(self) -> TelemetrySampler:
        self.t0 = time.time()
        self._loop.start()
        return self

    def stop(self) -> list[dict]:
        self._loop.stop()
        return self.rows
