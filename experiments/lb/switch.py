"""One load-balancing pipeline (ecmp, flowlet, dlb or qdlb) driven directly, with a clock you set.

    sw = LbSwitch("flowlet", ports=[1, 2], seed=0x1234, flowlet_gap_us=20000)
    sw.now_us = 1000
    port, frame = sw.forward(frame, ingress_port=9)

    sw = LbSwitch("qdlb", ports=[1, 2, 3])    # with egress queues you drain yourself:
    port = sw.enqueue(frame)                  # ingress; the packet waits in port's queue
    sw.dequeue(port)                          # egress sees the depth the dequeue leaves behind

The route sends every 10.0.0.0/8 address to `ports` as one equal-cost group (members watch no
port), the hash seed and flowlet gap are set as the controller sets them, and `host_ports` are
the ingress ports the DLB program tags on. No processes, no Mininet: what one switch decides for
a packet, packet by packet. `colliding_sports` finds UDP source ports ECMP puts on one link.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from experiments.lb.single_switch import by_suffix, load_program
from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.engine import EngineConfig
from p4switch.runtime import GroupRef, RuntimeState
from p4switch.runtime.entries import Entry
from traffic.frames import Endpoints, build_frame
from traffic.headers import WRITE_ONLY

MODES = ("ecmp", "flowlet", "dlb", "qdlb")


def program_single_switch(state: RuntimeState, model: Any, ports: list[int], *, seed: int = 0,
                          flowlet_gap_us: int | None = None,
                          host_ports: Iterable[int] = ()) -> None:
    """Program one switch as the controller would, with one ECMP group for 10.0.0.0/8 to
    `ports`: hash seed, flowlet gap (when given), reorder tagging on `host_ports`."""
    tables = [t.name for t in model.tables]
    actions = [a.name for a in model.actions]
    state.table(by_suffix(tables, "routing.hash_seed")).set_default(
        ActionCall(by_suffix(actions, "routing.set_hash_seed"), (seed,)))
    if flowlet_gap_us is not None:
        state.table(by_suffix(tables, "load_balancing.flowlet_gap")).set_default(
            ActionCall(by_suffix(actions, "load_balancing.set_flowlet_gap"), (flowlet_gap_us,)))
    host_ports = list(host_ports)
    if host_ports:
        tagging = by_suffix(tables, "reorder_tagging.host_ports")
        tag = by_suffix(actions, "reorder_tagging.tag_from_host_port")
        for port in host_ports:
            state.table(tagging).insert(
                Entry(keys=(FieldMatch("exact", value=port),), action=ActionCall(tag, ())))
    lpm = model.table(by_suffix(tables, "routing.ipv4_lpm"))
    profile = state.action_profile(lpm.implementation)
    next_hop = by_suffix(actions, "routing.set_next_hop")
    for port in ports:
        profile.insert_member(port, ActionCall(next_hop, (port, 0x020000000000 + port)))
    profile.insert_group(1, [(port, 1, None) for port in ports], max_size=len(ports))
    state.table(lpm.name).insert(
        Entry(keys=(FieldMatch("lpm", value=0x0A000000, prefix_len=8),), action=GroupRef(1)))


class LbSwitch:
    """A single switch running `p4src/<mode>.p4` with one ECMP group to `ports`."""

    def __init__(self, mode: str, ports: list[int], *, seed: int = 0,
                 flowlet_gap_us: int | None = None, host_ports: Iterable[int] = ()) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown load-balancing mode {mode!r}; choose from {', '.join(MODES)}")
        if flowlet_gap_us is not None and mode != "flowlet":
            raise ValueError(f"{mode}.p4 has no flowlet gap")
        compiled = load_program(mode)
        self.engine_model = compiled.model
        self.mode = mode
        self.ports = list(ports)
        self.now_us = 1
        self.state = RuntimeState(compiled.model)
        self.engine = compiled.new_engine(self.state, EngineConfig(now_us=lambda: self.now_us))
        program_single_switch(self.state, compiled.model, self.ports, seed=seed,
                              flowlet_gap_us=flowlet_gap_us,
                              host_ports=host_ports if mode in ("dlb", "qdlb") else ())

        self.queues: dict[int, deque] = {}

    def set_queue_aware(self, aware: bool) -> None:
        """qdlb: compare loads (the default) or spray round robin."""
        names = [a.name for a in self.engine_model.actions]
        self.state.table(by_suffix([t.name for t in self.engine_model.tables],
                                   "load_balancing.dlb_params")).set_default(
            ActionCall(by_suffix(names, "load_balancing.set_dlb_params"), (int(aware),)))

    def enqueue(self, frame: bytes, ingress_port: int = 100) -> int:
        """Run ingress; the packet waits in its egress port's queue. Returns the port."""
        items = self.engine.ingress(ingress_port, frame)
        if not items:
            raise RuntimeError(f"{self.mode}.p4 dropped a routed RoCEv2 frame")
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

    def forward(self, frame: bytes, ingress_port: int = 100) -> tuple[int, bytes]:
        """(egress port, frame as it leaves) of one frame; raises if the pipeline drops it."""
        out = self.engine.process(ingress_port, frame)
        if not out:
            raise RuntimeError(f"{self.mode}.p4 dropped a routed RoCEv2 frame")
        return out[0]

    def egress_port(self, frame: bytes, ingress_port: int = 100) -> int:
        return self.forward(frame, ingress_port)[0]


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
