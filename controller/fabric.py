"""The fabric controller: one P4Runtime connection per switch, routes for the whole fabric.

    ctl = FabricController(spec, build_pipeline("p4src/ecmp.p4", "p4switch"))
    ctl.connect()              # every switch, in parallel; primary on each
    reports = ctl.program()    # pipeline where needed, then only the differences
    ctl.set_link("ta-s0r0", 3, up=False)   # reroute around a failed link (control-plane repair)
    ctl.close()

Errors from all switches are collected and raised together (`ProgrammingError`).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from p4.v1 import p4runtime_pb2

from controller.deadlock import deadlock_free_routes
from controller.inband import apply_int
from controller.intent import DEFAULT_NAMES, Intent, RoutingNames
from controller.p4rt import P4RuntimeClient, P4RuntimeError
from controller.pipeline import Pipeline
from controller.routes import SwitchRoutes, compute_routes
from controller.schema import Schema
from controller.sync import ControllerError, SyncReport, sync_switch
from topos.errors import FabricLabError
from topos.model import FabricSpec

log = logging.getLogger(__name__)
T = TypeVar("T")
PortCounters = dict[int, tuple[int, int]]


class ProgrammingError(FabricLabError, RuntimeError):
    """One or more switches failed; `errors` holds one ControllerError per switch."""

    def __init__(self, errors: list[ControllerError]):
        self.errors = errors
        super().__init__(f"{len(errors)} switch(es) failed:\n" + "\n".join(map(str, errors)))


class FabricController:
    """Programs every switch of a fabric over P4Runtime and keeps the connections open."""

    def __init__(self, spec: FabricSpec, pipeline: Pipeline, *,
                 names: RoutingNames = DEFAULT_NAMES, election_id: tuple[int, int] = (0, 1),
                 hash_seed: int | None = None, timeout: float = 10.0, workers: int = 16,
                 deadlock_free: bool = False):
        self.spec = spec
        self.pipeline = pipeline
        self.schema = Schema(pipeline.p4info)
        self.intent = Intent(self.schema, names, caps=pipeline.target.caps)
        self.election_id = election_id
        self.hash_seed = hash_seed
        # refuse routes that close a buffer-dependency cycle (PFC deadlock): controller/deadlock.py
        self.deadlock_free = deadlock_free
        self.timeout = timeout
        self.workers = workers
        self.clients: dict[str, P4RuntimeClient] = {}
        self.down_ports: set[tuple[str, int]] = set()  # (switch, port) whose link is down
        self._lock = threading.Lock()  # one reprogramming at a time

    # ---- parallel helper -----------------------------------------------------------------
    def _each(self, names: Iterable[str], work: Callable[[str], T]) -> dict[str, T]:
        names = list(names)
        results: dict[str, T] = {}
        errors: list[ControllerError] = []
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(names)))) as pool:
            futures = {name: pool.submit(work, name) for name in names}
            for name, future in futures.items():
                try:
                    results[name] = future.result()
                except ControllerError as err:
                    errors.append(err)
                except P4RuntimeError as err:
                    errors.append(ControllerError(name, str(err)))
        if errors:
            raise ProgrammingError(errors)
        return results

    # ---- connections ---------------------------------------------------------------------
    def connect(self, switches: Iterable[str] | None = None) -> None:
        """Connect to every switch (or the named ones) and become primary on each."""
        def one(name: str) -> P4RuntimeClient:
            sw = self.spec.switch(name)
            client = P4RuntimeClient(sw.grpc_addr, sw.device_id, election_id=self.election_id,
                                     name=f"switch {name} ({sw.grpc_addr}, device {sw.device_id})",
                                     timeout=self.timeout)
            return client.connect()

        todo = [sw.name for sw in self.spec.switches] if switches is None else list(switches)
        try:
            self.clients.update(self._each(todo, one))
        except ProgrammingError:
            self.close()
            raise

    def close(self) -> None:
        while self.clients:
            _name, client = self.clients.popitem()
            client.close()

    def __enter__(self) -> FabricController:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- routing -------------------------------------------------------------------------
    def live_spec(self) -> FabricSpec:
        """The fabric without the links that are down."""
        if not self.down_ports:
            return self.spec
        live = copy.copy(self.spec)
        live.links = [ln for ln in self.spec.links
                      if (ln.a.node, ln.a.port) not in self.down_ports
                      and (ln.b.node, ln.b.port) not in self.down_ports]
        return live

    def routes(self) -> dict[str, SwitchRoutes]:
        """What every switch should hold with the links that are up.

        A switch with no link up (a failed ToR) keeps the routes it has when whole: it cannot
        forward anyway, and when its links come back it forwards at once instead of dropping
        what its hosts send it until the controller has rewritten it."""
        live = self.live_spec()
        plan = compute_routes(live, hash_seed=self.hash_seed)
        cut_off = [sw.name for sw in self.spec.switches if not live.links_of(sw.name)]
        if cut_off:
            whole = compute_routes(self.spec, hash_seed=self.hash_seed)
            plan.update((name, whole[name]) for name in cut_off)
        if self.deadlock_free:
            plan = deadlock_free_routes(live, plan)
        # a down link's port keeps its source MAC: the entry is harmless and saves rewrites
        for name, routes in plan.items():
            routes.source_macs = {ln.end(name).port: ln.end(name).mac
                                  for ln in self.spec.links_of(name)}
        return plan

    def program(self, *, push_pipeline: bool = True) -> list[SyncReport]:
        """Bring every connected switch to its intended state; one report per switch."""
        with self._lock:
            plan = self.routes()
            pipeline = self.pipeline if push_pipeline else None
            reports = self._each(
                self.clients,
                lambda name: sync_switch(self.clients[name], self.intent, plan[name], pipeline))
            if push_pipeline:  # a new pipeline starts with empty knob tables
                apply_int(self)
        return [reports[name] for name in self.clients]

    def mark_link(self, switch: str, port: int, *, up: bool) -> None:
        """Record the state of the link at (switch, port) without reprogramming."""
        link = next((ln for ln in self.spec.links_of(switch) if ln.end(switch).port == port),
                    None)
        if link is None:
            raise ControllerError(switch, f"no link on port {port}")
        ends = {(link.a.node, link.a.port), (link.b.node, link.b.port)}
        if up:
            self.down_ports -= ends
        else:
            self.down_ports |= ends
        log.info("link %s:%s <-> %s:%s %s", link.a.node, link.a.port, link.b.node, link.b.port,
                 "up" if up else "down")

    def set_link(self, switch: str, port: int, *, up: bool) -> list[SyncReport]:
        """Record a link state change at (switch, port) and reroute the whole fabric."""
        self.mark_link(switch, port, up=up)
        return self.program(push_pipeline=False)

    # ---- counters ------------------------------------------------------------------------
    def port_counters(self, switch: str, ports: Iterable[int] | None = None
                      ) -> tuple[PortCounters, PortCounters]:
        """(rx, tx) per-port (packets, bytes) of one switch's `ports` (default: its ports in the
        fabric), every cell in one P4Runtime Read: a few cells, not the whole arrays."""
        names = self.intent.names
        rx_id = self.schema.counter(names.rx_counter).preamble.id
        tx_id = self.schema.counter(names.tx_counter).preamble.id
        wanted = sorted(self.spec.ports(switch) if ports is None else ports)
        entities = []
        for counter_id in (rx_id, tx_id):
            for port in wanted:
                entity = p4runtime_pb2.Entity()
                entity.counter_entry.counter_id = counter_id
                entity.counter_entry.index.index = port
                entities.append(entity)
        rx: PortCounters = {}
        tx: PortCounters = {}
        for e in self.clients[switch].read(entities):
            cell = e.counter_entry
            (rx if cell.counter_id == rx_id else tx)[cell.index.index] = \
                (cell.data.packet_count, cell.data.byte_count)
        return rx, tx
