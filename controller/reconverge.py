"""Controller reconvergence: keep the routes in line with the links that work.

A link counts as down while any source says so: its port state (`LinkWatcher`, the switch
interfaces' operstate) or the link probes (`controller.probes`, a link that is up but drops).
When that verdict changes, the `Reconverger` marks the link on the `FabricController` and
rewrites the switches (`program()` writes only the differences), so routes avoid a failed link
and come back when it recovers. Events arriving together are handled with one rewrite. Every
event is kept with its timestamps (seen, rerouted) and logged.

    rc = Reconverger(ctl).start()      # watches the ports
    rc.report("ta-s0r0", 3, up=False, source="probe")
    rc.events                          # [LinkEvent(...), ...]
    rc.stop()
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from controller.fabric import FabricController, ProgrammingError
from controller.linkwatch import LinkWatcher
from controller.p4rt import P4RuntimeError
from topos.model import Link

log = logging.getLogger(__name__)
LinkKey = tuple[str, int, str, int]


@dataclass
class LinkEvent:
    link: str  # "a~b"
    up: bool  # the link's verdict after this event
    source: str  # "port", "probe", ...
    seen: float  # epoch seconds the change was observed
    rerouted: float | None = None  # epoch seconds the rewrite finished (None: no change needed)
    writes: int = 0
    error: str = ""

    @property
    def reroute_s(self) -> float | None:
        return None if self.rerouted is None else self.rerouted - self.seen

    def __str__(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.seen)) + f".{self.seen % 1:.3f}"[2:]
        what = f"{self.link} {'up' if self.up else 'down'} ({self.source})"
        if self.error:
            return f"{stamp} {what}: rerouting failed: {self.error}"
        if self.rerouted is None:
            return f"{stamp} {what}: no route change"
        reroute_s = self.rerouted - self.seen
        return f"{stamp} {what}: rerouted in {reroute_s * 1000:.0f} ms, {self.writes} writes"


def _key(link: Link) -> LinkKey:
    return (link.a.node, link.a.port, link.b.node, link.b.port)


class Reconverger:
    """Turns link events into route rewrites on one `FabricController`."""

    def __init__(self, ctl: FabricController, *, watch_ports: bool = True,
                 interval: float = 0.05, log_path: Path | None = None):
        self.ctl = ctl
        self.spec = ctl.spec
        self.events: list[LinkEvent] = []
        self.log_path = log_path
        self._reasons: dict[LinkKey, set[str]] = {}
        self._queue: queue.Queue = queue.Queue()
        self._watcher = LinkWatcher(self.spec, self._on_port, interval) if watch_ports else None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()

    # ---- inputs --------------------------------------------------------------------------
    def link_of(self, switch: str, port: int) -> Link:
        for link in self.spec.links_of(switch):
            if link.end(switch).port == port:
                return link
        raise KeyError(f"{switch} has no link on port {port}")

    def _on_port(self, switch: str, port: int, up: bool) -> None:
        self.report(switch, port, up, source="port")

    def report(self, switch: str, port: int, up: bool, source: str = "port") -> None:
        """A source's view of the link at (switch, port) changed; handled asynchronously."""
        self._idle.clear()
        self._queue.put((self.link_of(switch, port), up, source, time.time()))

    def isolate(self, link: Link, bad: bool, source: str = "probe") -> None:
        """Treat `link` as down (bad) or give it back (not bad) on behalf of `source`."""
        end = link.a if self.spec.is_switch(link.a.node) else link.b
        self.report(end.node, end.port, not bad, source)

    def down_links(self) -> list[str]:
        with self._lock:
            return [f"{k[0]}~{k[2]}" for k, reasons in self._reasons.items() if reasons]

    # ---- the loop ------------------------------------------------------------------------
    def start(self) -> Reconverger:
        if self._watcher is not None:
            for switch, port in self._watcher.down_now():
                link = self.link_of(switch, port)
                self._reasons.setdefault(_key(link), set()).add("port")
                self.ctl.mark_link(switch, port, up=False)
            self._watcher.start()
        self._thread = threading.Thread(target=self._run, name="reconverge", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every reported event has been handled."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            while True:  # events that arrived together are handled with one rewrite
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                batch.append(more)
            self._handle(batch)
            if self._queue.empty():
                self._idle.set()

    def _handle(self, batch: list[tuple[Link, bool, str, float]]) -> None:
        changed: list[LinkEvent] = []
        for link, up, source, seen in batch:
            key = _key(link)
            with self._lock:
                reasons = self._reasons.setdefault(key, set())
                was_down = bool(reasons)
                (reasons.discard if up else reasons.add)(source)
                now_down = bool(reasons)
            event = LinkEvent(f"{link.a.node}~{link.b.node}", not now_down, source, seen)
            if was_down != now_down:
                self.ctl.mark_link(link.a.node, link.a.port, up=not now_down)
                changed.append(event)
            self._record(event)
        if not changed:
            return
        try:
            reports = self.ctl.program(push_pipeline=False)
        except (ProgrammingError, P4RuntimeError) as err:
            for event in changed:
                event.error = str(err)
                log.error("%s", event)
            return
        done = time.time()
        writes = sum(r.writes for r in reports)
        for event in changed:
            event.rerouted, event.writes = done, writes
            log.info("%s", event)
            self._write_log(event)

    def _record(self, event: LinkEvent) -> None:
        self.events.append(event)
        if event.rerouted is None and not event.error:
            log.debug("%s", event)

    def _write_log(self, event: LinkEvent) -> None:
        if self.log_path is None:
            return
        with self.log_path.open("a") as f:
            f.write(f"{event}\n")

    def __enter__(self) -> Reconverger:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
