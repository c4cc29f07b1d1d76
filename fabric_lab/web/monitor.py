"""What the web view shows, sampled from the running fabric into one JSON-ready snapshot.

Every `interval` (1 s): every switch's per-port packet/byte counters over P4Runtime (link
utilisation per direction; one switch at a time, spread over the interval), and all the while
the operational state of every link's switch-side interfaces, the links the probes isolated and
those the view set dropping. Every `slow_every` intervals: ECN marks and PFC frames per port
(P4Runtime counters of the program) and, where the switch serves its runtime CLI itself
(`Capabilities.serves_runtime_cli`: p4switch), queue depths (the telemetry register
`queue_depth_last` over the runtime CLI; on BMv2 that would take a CLI process per switch, so
no depths there). Per-flow throughput comes from the caller (the demo's receivers);
without it, the traffic delivered to each NIC (its switch port's transmit counter) is charted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from controller.fabric import FabricController
from controller.p4rt import P4RuntimeError
from controller.periodic import Periodic
from controller.schema import SchemaError
from mechanisms import ecn, pfc, telemetry
from targets import RuntimeCli, RuntimeCliError, Target, get_target
from topos.mininet.failures import link_name, link_states
from topos.model import FabricSpec

log = logging.getLogger(__name__)
HISTORY_S = 10.0
SLOW_COUNTERS = {"ecn": ecn.MARKED_COUNTER, "pfc_tx": pfc.TX_COUNTER, "pfc_rx": pfc.RX_COUNTER}
FlowSeries = dict  # {"t": [s before now...], "series": {name: [Mb/s...]}, "lost": {...}}


@dataclass
class Sources:
    """Where the monitor gets what the fabric's counters do not tell."""

    events: Callable[[], list] = list  # the controller's LinkEvents
    isolated: Callable[[], set[str]] = set  # links the probes isolated ("a~b")
    flows: Callable[[], FlowSeries | None] = lambda: None  # per-flow throughput
    status: Callable[[], str] = str  # one line: what is happening
    mode: Callable[[], str] | None = None  # load-balancing mode (None: the controller's)
    job: Callable[[], dict | None] = lambda: None  # a training job's panel (fabric_lab.web.job)
    inband: Callable[[], dict | None] = lambda: None  # the INT panel (fabric_lab.web.inband)


@dataclass
class PortStats:
    mbps: float = 0.0  # leaving the port
    depth: int | None = None
    ecn: float = 0.0  # marks per second
    pfc_tx: float = 0.0  # pause frames sent per second
    pfc_rx: float = 0.0


@dataclass
class _Reading:
    t: float
    values: dict[tuple[str, int], int] = field(default_factory=dict)  # (what, port) -> count


class FabricMonitor:
    """Samples a controlled fabric on a thread; `snapshot()` is the page's state.

    The switches are read one at a time, evenly spread over `interval` (each switch once per
    interval, its slow counters every `slow_every` visits): a steady trickle of reads, never a
    burst that stalls every switch process at once on a small machine."""

    def __init__(self, spec: FabricSpec, ctl: FabricController | None, *,
                 target: Target | str = "p4switch",
                 sources: Sources | None = None, degraded: Callable[[], dict[str, float]] = dict,
                 interval: float = 1.0, slow_every: int = 2):
        self.spec, self.ctl, self.target = spec, ctl, get_target(target)
        self.sources = sources or Sources()
        self.degraded = degraded
        self.interval, self.slow_every = interval, slow_every
        self.errors: deque[str] = deque(maxlen=5)
        self._lock = threading.Lock()
        self._ticks = 0
        self._last: dict[str, _Reading] = {}  # per switch: tx bytes per port
        self._last_slow: dict[str, _Reading] = {}  # per switch: ECN/PFC counts per port
        self._rate: dict[tuple[str, int], float] = {}  # (switch, port) -> Mb/s leaving it
        self._links: dict[str, dict] = {}
        depth = 0 if self.target.caps.serves_runtime_cli else None
        self._ports = {(sw.name, ln.end(sw.name).port): PortStats(depth=depth)
                       for sw in spec.switches for ln in spec.links_of(sw.name)}
        self._nic_series: deque[tuple[float, dict[str, float]]] = deque()
        self._channels: dict[str, RuntimeCli] = {}
        self._snapshot: dict | None = None
        period = interval / max(1, len(spec.switches))
        self._loop = Periodic("web-monitor", period, self.sample, immediate=True,
                              errors=(Exception,),  # a failed round must not end the view
                              on_error=self._error)

    def _error(self, err: BaseException) -> None:
        log.warning("web view sample failed: %s", err)
        self.errors.append(str(err))

    def start(self) -> FabricMonitor:
        self._sample_links()  # the first page already shows every link
        self._loop.start()
        return self

    def stop(self) -> None:
        self._loop.stop()
        for channel in self._channels.values():
            channel.close()

    # ---- sampling ------------------------------------------------------------------------
    def sample(self) -> None:
        """One tick: the next switch's counters, every link's state."""
        n = len(self.spec.switches)
        switch = self.spec.switches[self._ticks % n]
        visit = self._ticks // n
        self._ticks += 1
        if self.ctl is not None:
            _rx, tx = self.ctl.port_counters(switch.name)
            now = _Reading(time.time(), {("tx", port): v[1] for port, v in tx.items()})
            slow = (self._read_slow(switch.name, switch.thrift_port)
                    if visit % self.slow_every == 0 else None)
            with self._lock:
                self._update_switch(switch.name, now, slow)
        self._sample_links()
        if self._ticks % n == 0 and self.ctl is not None:
            with self._lock:
                self._add_nic_point()

    def _sample_links(self) -> None:
        states = {name: state for name, _intfs, state in link_states(self.spec)}
        with self._lock:
            self._update_links(states)

    def _read_slow(self, switch: str, thrift_port: int) -> _Reading:
        assert self.ctl is not None  # sample() reads counters only with a controller
        out = _Reading(time.time())
        client = self.ctl.clients.get(switch)
        for what, name in SLOW_COUNTERS.items():
            try:
                counter_id = self.ctl.schema.counter(name).preamble.id
            except SchemaError:
                continue  # a program without it
            try:
                values = client.read_counter(counter_id) if client else {}
            except P4RuntimeError as err:
                self.errors.append(str(err))
                continue
            out.values.update(((what, port), v[0]) for port, v in values.items() if v[0])
        out.values.update((("depth", port), d) for port, d in self._depths(switch, thrift_port).items())
        return out

    def _depths(self, switch: str, thrift_port: int) -> dict[int, int]:
        """Per port, the deepest of its queues' `queue_depth_last` (a switch that serves its
        runtime CLI only)."""
        if not self.target.caps.serves_runtime_cli:
            return {}
        channel = self._channels.get(switch)
        if channel is None:
            channel = self._channels[switch] = self.target.cli(thrift_port, 5.0)
        try:
            text = channel.command(f"register_read {telemetry.DEPTH_LAST}")
        except RuntimeCliError as err:
            self.errors.append(str(err))
            return {}
        cells = [int(v) for v in text.split("=", 1)[-1].replace(",", " ").split()
                 if v.lstrip("-").isdigit()]
        out: dict[int, int] = {}
        for cell, value in enumerate(cells):
            if value:
                port = cell >> 3
                out[port] = max(out.get(port, 0), value)
        return out

    def _update_switch(self, switch: str, now: _Reading, slow: _Reading | None) -> None:
        prev = self._last.get(switch)
        self._last[switch] = now
        if prev is not None and now.t > prev.t:
            for (_what, port), n in now.values.items():
                mbps = max(0, n - prev.values.get(("tx", port), n)) * 8 / (now.t - prev.t) / 1e6
                self._rate[(switch, port)] = mbps
                if (switch, port) in self._ports:
                    self._ports[(switch, port)].mbps = round(mbps, 3)
        if slow is None:
            return
        before = self._last_slow.get(switch)
        self._last_slow[switch] = slow
        for (sw, port), stats in self._ports.items():
            if sw != switch:
                continue
            if self.target.caps.serves_runtime_cli:
                stats.depth = slow.values.get(("depth", port), 0)
            if before is not None and slow.t > before.t:
                for what in SLOW_COUNTERS:
                    grown = slow.values.get((what, port), 0) - before.values.get((what, port), 0)
                    setattr(stats, what, round(max(0, grown) / (slow.t - before.t), 1))

    def _update_links(self, states: dict[str, str]) -> None:
        rate = self._rate
        isolated, degraded = self.sources.isolated(), self.degraded()
        for ln in self.spec.links:
            name = link_name(ln)
            ab = rate.get((ln.a.node, ln.a.port)) if self.spec.is_switch(ln.a.node) else None
            ba = rate.get((ln.b.node, ln.b.port)) if self.spec.is_switch(ln.b.node) else None
            oper = states.get(name, "")
            state = ("down" if any(s not in ("up", "unknown") for s in oper.split("/") if s)
                     else "isolated" if name in isolated else "degraded" if name in degraded
                     else "up")
            rates = [r for r in (ab, ba) if r is not None]
            util = max(rates) / ln.rate_mbps if rates and ln.rate_mbps else 0.0
            self._links[name] = {"state": state, "ab": None if ab is None else round(ab, 3),
                                 "ba": None if ba is None else round(ba, 3),
                                 "util": round(util, 4), "drop": degraded.get(name)}

    def _add_nic_point(self) -> None:
        now = time.time()
        delivered = {nic.name: round(sum(self._rate.get(att, 0.0)
                                         for att in self.spec.attachments(nic.name)), 3)
                     for nic in self.spec.host_nics()}
        self._nic_series.append((now, delivered))
        while self._nic_series and self._nic_series[0][0] < now - HISTORY_S:
            self._nic_series.popleft()

    # ---- the page's state ----------------------------------------------------------------
    def snapshot(self, max_age: float = 0.2) -> dict:
        """The page's state; one made less than `max_age` ago is reused (several pages)."""
        with self._lock:
            cached = self._snapshot
        if cached is not None and time.time() - cached["t"] < max_age:
            return cached
        state = self._make_snapshot()
        with self._lock:
            self._snapshot = state
        return state

    def _make_snapshot(self) -> dict:
        flows = self.sources.flows()
        with self._lock:
            if flows is None:
                now = time.time()
                flows = {"t": [round(t - now, 3) for t, _ in self._nic_series],
                         "what": "delivered to each NIC",
                         "series": {nic.name: [v.get(nic.name, 0.0) for _, v in self._nic_series]
                                    for nic in self.spec.host_nics()}}
            ports = [{"switch": sw, "port": port, "mbps": s.mbps, "depth": s.depth, "ecn": s.ecn,
                      "pfc_tx": s.pfc_tx, "pfc_rx": s.pfc_rx}
                     for (sw, port), s in sorted(self._ports.items())]
            links = dict(self._links)
        events = [{"t": e.seen, "link": e.link, "up": e.up, "source": e.source,
                   "reroute_ms": None if e.reroute_s is None else round(e.reroute_s * 1000, 1),
                   "error": e.error, "text": str(e)}
                  for e in self.sources.events()[-40:]]
        mode = self.sources.mode() if self.sources.mode else ""
        return {"t": time.time(), "status": self.sources.status(), "mode": mode,
                "target": self.target.name, "links": links, "ports": ports, "flows": flows,
                "events": events, "errors": list(self.errors), "job": self.sources.job(),
                "int": self.sources.inband()}
