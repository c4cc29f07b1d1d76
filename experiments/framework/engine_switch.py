"""One switch's P4 pipeline driven directly in the p4switch engine, with a clock you set: what
one switch decides for a packet, packet by packet. No processes, no Mininet, no root.

    sw = LbSwitch("flowlet", ports=[1, 2], seed=0x1234, flowlet_gap_us=20000)
    sw.now_us = 1000
    port, frame = sw.forward(frame, ingress_port=9)

    sw = LbSwitch("qdlb", ports=[1, 2, 3])    # with egress queues you drain yourself:
    port = sw.enqueue(frame)                  # ingress; the packet waits in port's queue
    sw.dequeue(port)                          # egress sees the depth the dequeue leaves behind

    sw = EngineSwitch(compile_program(path), ports=[1, 2])   # any program with the lab's names
    out = sw.at_depth(frame, enq_qdepth=40)   # as it leaves a queue 40 packets deep

The switch is programmed as the controller programs it (`controller.intent.Intent` for the
route and the hash seed, `controller.knobs` with the mechanisms' knobs for the flowlet gap, the
tagging ports and queue awareness), through the P4Runtime entity codec of p4switch's own
server (`EngineClient`): one route sends every 10.0.0.0/8 address to `ports` as one equal-cost group, the hash
seed and flowlet gap are the controller's knobs, and `host_ports` are the ingress ports the DLB
program tags on. The labs' checkers (`fabric_lab.labkit.LabSwitch`) and the load-balancing
experiments use it; `colliding_sports` finds UDP source ports ECMP puts on one link.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import Any

from p4.v1 import p4runtime_pb2

from controller.intent import Intent
from controller.knobs import Row, knob_state, sync_knob
from controller.lb import MODES
from controller.routes import NextHop, SwitchRoutes
from controller.schema import Schema
from controller.state import DeviceState, plan_updates
from mechanisms import P4SRC, flowlet, program_path, qdlb, tagging
from p4switch.compiler import CompiledProgram, compile_program
from p4switch.cpmodel import ActionCall
from p4switch.engine import EngineConfig
from p4switch.names import suffix_matches
from p4switch.runtime import RuntimeState
from p4switch.runtime.entries import Entry
from traffic.frames import Endpoints, build_frame
from traffic.headers import WRITE_ONLY

ALL_HOSTS = "10.0.0.0/8"  # the one route: every host address of the lab's fabrics

__all__ = ["MODES", "P4SRC", "EngineClient", "EngineSwitch", "LbSwitch", "PacketDropped",
           "by_suffix", "colliding_sports", "flow_index", "load_program",
           "program_single_switch", "roce_frame"]


class PacketDropped(RuntimeError):
    """The pipeline dropped a packet the route should have forwarded."""


@cache
def load_program(name: str = "ecmp") -> CompiledProgram:
    """`p4src/<name>.p4`, compiled once per process."""
    return compile_program(program_path(name))


def by_suffix(names: Iterable[str], suffix: str) -> str:
    """The one name ending in `suffix` at a dot (`routing.ipv4_lpm`); LookupError otherwise."""
    matches = suffix_matches(names, suffix)
    if len(matches) != 1:
        raise LookupError(f"expected one name ending in {suffix!r}, found {matches}")
    return matches[0]


class EngineClient:
    """The controller's view of one switch (`read`, `write` of P4Runtime entities, as
    `controller.p4rt.P4RuntimeClient`), served in-process by p4switch's own P4Runtime entity
    codec on a `RuntimeState`: no server, no gRPC."""

    def __init__(self, compiled: CompiledProgram, state: RuntimeState) -> None:
        from p4switch.server.entities import EntityCodec

        self.p4info, index, self.schema = _p4info(compiled)
        self.codec = EntityCodec(self.p4info, index, compiled.model, state)

    def write(self, updates: Sequence[p4runtime_pb2.Update]) -> None:
        for update in updates:
            self.codec.write(update)

    def read(self, entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        return [found for entity in entities for found in self.codec.read(entity)]


_P4INFO: weakref.WeakKeyDictionary[CompiledProgram, tuple[Any, Any, Schema]] = \
    weakref.WeakKeyDictionary()


def _p4info(compiled: CompiledProgram) -> tuple[Any, Any, Schema]:
    """The program's P4Info, its index and the controller's schema of it, built once per
    program (building a P4Info takes ~15 ms; experiments make many switches of one program)."""
    if compiled not in _P4INFO:
        from p4switch.p4info import P4InfoIndex, build_p4info

        p4info = build_p4info(compiled.model)
        _P4INFO[compiled] = (p4info, P4InfoIndex(p4info), Schema(p4info))
    return _P4INFO[compiled]


def program_single_switch(client: EngineClient, ports: list[int], *, seed: int = 0,
                          flowlet_gap_us: int | None = None,
                          host_ports: Iterable[int] = ()) -> None:
    """Program one switch through the controller's own code: one route, 10.0.0.0/8 to an
    equal-cost group of `ports` (`controller.intent.Intent`, next hop MAC 02:00:00:00:00:PP),
    the hash seed, and the knobs (`controller.knobs`): the flowlet gap (when given) and reorder
    tagging on `host_ports` (when any)."""
    schema = client.schema
    hops = tuple(NextHop(port, _mac(0x020000000000 + port), f"port {port}") for port in ports)
    routes = SwitchRoutes("engine", 0, routes={ALL_HOSTS: hops}, groups={hops: 1},
                          hash_seed=seed)
    for batch in plan_updates(Intent(schema).state(routes), DeviceState()):
        client.write(batch)
    if flowlet_gap_us is not None:
        knob = flowlet.MECHANISM.knob("flowlet_gap")
        sync_knob(client, schema, knob,
                  knob_state(schema, knob, default={flowlet.GAP_PARAM: flowlet_gap_us}))
    rows: list[Row] = [((port,), {}) for port in host_ports]
    if rows:
        knob = tagging.MECHANISM.knob("host_ports")
        sync_knob(client, schema, knob, knob_state(schema, knob, rows))


def _mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


class EngineSwitch:
    """A compiled program in the engine with one ECMP group for 10.0.0.0/8 to `ports`, set up
    as the controller would: hash seed, flowlet gap, DLB tagging ports. `now_us` is its clock;
    `native`: the program's native pipeline (p4switch/native.py) runs it.

    A dropped packet raises `dropped` (PacketDropped here; a lab's checker raises its verdict);
    `label` names the switch in that message."""

    dropped: type[Exception] = PacketDropped

    def __init__(self, compiled: CompiledProgram, ports: list[int], *, seed: int = 0,
                 flowlet_gap_us: int | None = None, host_ports: Iterable[int] = (),
                 label: str = "the switch", native: bool = False) -> None:
        self.label = label
        self.ports = list(ports)
        self.now_us = 1
        self.model = compiled.model
        self.state = RuntimeState(compiled.model)
        self.engine = compiled.new_engine(self.state, EngineConfig(now_us=lambda: self.now_us),
                                          native=native)
        self.tables = [t.name for t in self.model.tables]
        self.actions = [a.name for a in self.model.actions]
        self.queues: dict[int, deque] = {}
        self.client = EngineClient(compiled, self.state)
        program_single_switch(self.client, self.ports, seed=seed,
                              flowlet_gap_us=flowlet_gap_us, host_ports=host_ports)

    def lookup(self, names: Iterable[str], suffix: str) -> str:
        """The program's one table/action/counter name ending in `suffix`."""
        return by_suffix(names, suffix)

    # ---- one packet through the whole pipeline ------------------------------------------
    def forward(self, frame: bytes, ingress_port: int = 100) -> tuple[int, bytes]:
        """(egress port, frame as it leaves) of one frame; raises if the pipeline drops it."""
        out = self.engine.process(ingress_port, frame)
        if not out:
            raise self.dropped(f"{self.label} dropped a routed RoCEv2 packet")
        return out[0]

    def egress_port(self, frame: bytes, ingress_port: int = 100) -> int:
        return self.forward(frame, ingress_port)[0]

    def at_depth(self, frame: bytes, enq_qdepth: int, ingress_port: int = 100) -> bytes:
        """The frame as it leaves after waiting in a queue `enq_qdepth` packets deep."""
        queued = self.engine.ingress(ingress_port, frame)
        if not queued:
            raise self.dropped(f"{self.label} dropped a routed RoCEv2 packet in ingress")
        out, _ = self.engine.egress(queued[0], enq_qdepth=enq_qdepth)
        if not out:
            raise self.dropped(f"{self.label} dropped the packet in egress (queue depth "
                               f"{enq_qdepth})")
        return out[0][1]

    # ---- egress queues you drain yourself -----------------------------------------------
    def enqueue(self, frame: bytes, ingress_port: int = 100) -> int:
        """Run ingress; the packet waits in its egress port's queue. Returns the port."""
        items = self.engine.ingress(ingress_port, frame)
        if not items:
            raise self.dropped(f"{self.label} dropped a routed RoCEv2 packet")
        for item in items:
            self.queues.setdefault(item.egress_port, deque()).append(item)
        return items[0].egress_port

    def depth(self, port: int) -> int:
        return len(self.queues.get(port, ()))

    def dequeue(self, port: int) -> bytes | None:
        """Send the oldest packet queued on `port` (egress sees the depth left behind)."""
        queue = self.queues.get(port)
        if not queue:
            return None
        item = queue.popleft()
        out, _ = self.engine.egress(item, deq_qdepth=len(queue))
        return out[0][1] if out else None

    # ---- control plane ------------------------------------------------------------------
    def insert(self, table_suffix: str, keys: tuple, action_suffix: str,
               params: tuple = (), priority: int = 0) -> None:
        """One entry in the table named `...table_suffix`."""
        self.state.table(self.lookup(self.tables, table_suffix)).insert(
            Entry(keys=keys, priority=priority,
                  action=ActionCall(self.lookup(self.actions, action_suffix), params)))

    def counter(self, suffix: str, index: int) -> int:
        """Packets counted at `index` of the counter named `...suffix`."""
        names = [c.name for c in self.model.counters]
        return self.state.counter(self.lookup(names, suffix)).read(index)[0]


class LbSwitch(EngineSwitch):
    """A single switch running `p4src/<mode>.p4` (a load-balancing mode) with one ECMP group
    to `ports`."""

    def __init__(self, mode: str, ports: list[int], *, seed: int = 0,
                 flowlet_gap_us: int | None = None, host_ports: Iterable[int] = ()) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown load-balancing mode {mode!r}; choose from {', '.join(MODES)}")
        if flowlet_gap_us is not None and mode != "flowlet":
            raise ValueError(f"{mode}.p4 has no flowlet gap")
        self.mode = mode
        super().__init__(load_program(mode), ports, seed=seed, flowlet_gap_us=flowlet_gap_us,
                         host_ports=host_ports if mode in ("dlb", "qdlb") else (),
                         label=f"{mode}.p4")

    def set_queue_aware(self, aware: bool) -> None:
        """qdlb: compare loads (the default) or spray round robin (the controller's knob)."""
        knob = qdlb.MECHANISM.knob("queue_aware")
        schema = self.client.schema
        sync_knob(self.client, schema, knob,
                  knob_state(schema, knob, default={qdlb.AWARE_PARAM: int(aware)}))


def roce_frame(sport: int, *, src_ip: str = "10.0.0.1", dst_ip: str = "10.0.1.1",
               dqpn: int = 0x100, psn: int = 0, payload: int = 64) -> bytes:
    """An RDMA WRITE ONLY frame of one queue pair (its UDP source port is the flow entropy)."""
    ep = Endpoints(src_mac="02:00:0a:00:00:01", dst_mac="02:53:00:01:00:01", src_ip=src_ip,
                   dst_ip=dst_ip, sport=sport, dqpn=dqpn)
    return build_frame(ep, WRITE_ONLY, psn=psn, payload=bytes(payload), dlen=payload)


def colliding_sports(ports: list[int], seed: int, *, src_ip: str, dst_ip: str,
                     first: int = 49152, count: int = 2) -> Iterator[tuple[int, ...]]:
    """Groups of `count` UDP source ports that ECMP (`ecmp.p4`, this seed) puts on one port,
    in increasing order of the first source port."""
    switch = LbSwitch("ecmp", ports, seed=seed)
    by_port: dict[int, list[int]] = {}
    for sport in range(first, 65536):
        port = switch.egress_port(roce_frame(sport, src_ip=src_ip, dst_ip=dst_ip))
        found = by_port.setdefault(port, [])
        found.append(sport)
        if len(found) == count:
            yield tuple(found)
            del by_port[port]


@cache
def _tagger() -> LbSwitch:
    return LbSwitch("dlb", [1], host_ports=[2])


def flow_index(sport: int, *, src_ip: str, dst_ip: str) -> int:
    """The index of a RoCEv2 flow's per-flow registers (its DLB tag's flow id), which every
    switch computes alike (a CRC-32 of the 5-tuple, no seed)."""
    _, out = _tagger().forward(roce_frame(sport, src_ip=src_ip, dst_ip=dst_ip), ingress_port=2)
    return int.from_bytes(out[36:38], "big")
