"""ECN/PFC knobs, the PFC watchdog and the BMv2 pause agent, without a network."""

from __future__ import annotations

import queue
import threading
import time
from functools import cache

import pytest
from p4.v1 import p4runtime_pb2

from controller.congestion import (
    ALWAYS,
    ROCE_CLASSES,
    CongestionConfig,
    CongestionConfigError,
    EcnProfile,
    PfcConfig,
    configure_switch,
    table_entities,
)
from controller.pfc_agent import (
    PauseAgent,
    PfcWatchdog,
    packet_in_port,
    parse_punted_pfc,
)
from controller.pipeline import build_pipeline
from controller.schema import Schema
from mechanisms import program_path
from targets import RuntimeCliError
from traffic.pfc import build_pause

PROGRAM = program_path("ecmp")


@cache
def schema() -> Schema:
    return Schema(build_pipeline(PROGRAM, "p4switch").p4info)


def test_ecn_profile_is_red() -> None:
    red = EcnProfile(kmin=5, kmax=20, pmax=0.2)
    assert red.probability(5) == 0 and red.probability(20) == 1.0
    assert red.probability(12) == pytest.approx(0.2 * 7 / 15)
    ranges = red.ranges()
    assert ranges[0] == (6, 6, round(0.2 / 15 * 65535))
    assert ranges[-1] == (20, (1 << 19) - 1, ALWAYS)
    assert [lo for lo, _, _ in ranges] == list(range(6, 21))  # one entry per depth, no overlap
    assert EcnProfile(kmin=8, kmax=8).ranges() == [(8, (1 << 19) - 1, ALWAYS)]  # a threshold


def test_bad_knobs_are_reported_together() -> None:
    config = CongestionConfig(ecn=EcnProfile(kmin=10, kmax=5, pmax=1.5),
                              pfc=PfcConfig(xoff=8, xon=8, quanta=0, priorities=(3, 9)),
                              dscp_priority={70: 9})
    with pytest.raises(CongestionConfigError) as err:
        config.check()
    text = str(err.value)
    for part in ("kmax (5) must be >= kmin (10)", "pmax must be in [0, 1]", "xon must be in",
                 "quanta must be 1..65535", "DSCP must be 0..63", "priority of DSCP 70",
                 "PFC priorities must be some of 0..7", "PFC on priority [3]"):
        assert part in text


def test_pfc_timing() -> None:
    pfc = PfcConfig(xoff=10, xon=4, quanta=1000, link_mbps=10)
    assert pfc.pause_s() == pytest.approx(0.0512)
    assert pfc.quantum_us_q10 == round(51.2 * 1024)
    assert pfc.paused_threshold == 5


def test_table_entities_match_the_p4info() -> None:
    config = CongestionConfig(ecn=EcnProfile(5, 20, 0.2), pfc=PfcConfig(10, 4, 1000, 20_000),
                              dscp_priority=ROCE_CLASSES)
    entities = table_entities(schema(), [1, 2, 3], config)
    by_table: dict[str, int] = {}
    for e in entities:
        name = schema().name_of(e.table_entry.table_id)
        by_table[name] = by_table.get(name, 0) + 1
    assert by_table == {"FabricEgress.ecn.ecn_profile": 15,
                        "FabricIngress.traffic_class.dscp_priority": 2,
                        "FabricEgress.pfc.pfc_config": 3,
                        "FabricIngress.pfc_reception.pfc_propagation": 3,
                        "FabricIngress.pfc_reception.pfc_link": 3}
    only_ecn = table_entities(schema(), [1], CongestionConfig(ecn=EcnProfile(5, 5)))
    assert len(only_ecn) == 1  # no DSCP map unless asked: everything stays on priority 0


class FakeClient:
    def __init__(self, existing: list[p4runtime_pb2.Entity]) -> None:
        self.existing = existing
        self.writes: list[list[p4runtime_pb2.Update]] = []

    def read(self, entities):
        kinds = {e.WhichOneof("entity") for e in entities}
        if "packet_replication_engine_entry" in kinds:
            return []
        return self.existing

    def write(self, updates):
        if updates:
            self.writes.append(list(updates))


def test_configure_replaces_what_was_there() -> None:
    old = table_entities(schema(), [1, 2], CongestionConfig(ecn=EcnProfile(5, 20)))
    client = FakeClient(old)
    written = configure_switch(client, schema(), [1, 2],
                               CongestionConfig(pfc=PfcConfig(10, 4), dscp_priority=ROCE_CLASSES))
    deletes, inserts, default, sessions = client.writes
    assert all(u.type == p4runtime_pb2.Update.DELETE for u in deletes) and len(deletes) == len(old)
    assert len(inserts) == written == 2 + 2 + 2 + 2  # classes; pfc_config, propagation, link
    assert default[0].type == p4runtime_pb2.Update.MODIFY
    assert [u.entity.packet_replication_engine_entry.clone_session_entry.session_id
            for u in sessions] == [1001, 1002]


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_watchdog_drops_on_a_storm_and_restores_after_it() -> None:
    clock, paused, depths = Clock(), {"on": False}, []
    dog = PfcWatchdog([("s1", 2, 3)], lambda *_: paused["on"],
                      lambda sw, port, prio, depth: depths.append(depth),
                      restore_depth=64, clock=clock)
    for t, on in ((0.0, True), (0.1, True), (0.15, False), (0.2, True), (0.3, True)):
        clock.t, paused["on"] = t, on
        dog.poll()
    assert depths == []  # the pause broke at 0.15: no 200 ms of continuous pause yet
    clock.t = 0.4
    dog.poll()
    assert depths == [0] and dog.storms == 1  # paused since 0.2
    paused["on"] = False
    for t in (0.5, 0.6):
        clock.t = t
        dog.poll()
    assert depths == [0]
    clock.t = 0.71
    dog.poll()
    assert depths == [0, 64] and [e.kind for e in dog.events] == ["storm", "restore"]


def test_pause_agent_emulates_pause_with_queue_rates() -> None:
    clock, rates = Clock(), []
    agent = PauseAgent(lambda port, prio, pps: rates.append((port, prio, pps)), link_bps=10e6,
                       normal_pps=lambda port, prio: 250, clock=clock)
    assert not agent.on_frame(2, b"\x00" * 60)
    frame = build_pause("02:00:00:00:00:01", {3: 1000})  # 51.2 ms at 10 Mb/s
    assert parse_punted_pfc(frame) == {3: 1000}
    # paused = a tenth of the rate, not a standstill: BMv2 keeps each packet's departure time
    assert agent.on_frame(2, frame) and rates == [(2, 3, 25)] and agent.is_paused(2, 3)
    clock.t = 0.03
    agent.on_frame(2, frame)  # a refresh extends the pause without another write
    clock.t = 0.07
    agent.expire()
    assert rates == [(2, 3, 25)] and agent.paused_time(2, 3) == pytest.approx(0.07)
    clock.t = 0.09
    agent.expire()
    assert rates == [(2, 3, 25), (2, 3, 250)] and not agent.is_paused(2, 3)
    assert agent.paused_time(2, 3) == pytest.approx(0.03 + 0.0512)  # until the pause ran out
    clock.t = 1.0
    agent.on_frame(2, frame)
    clock.t = 1.01
    agent.on_frame(2, build_pause("02:00:00:00:00:01", {3: 0}))  # XON restores at once
    assert rates[-1] == (2, 3, 250) and not agent.is_paused(2, 3)
    assert agent.paused_time(2, 3) == pytest.approx(0.0812 + 0.01)
    assert agent.paused_time(5, 3) == 0.0


def test_pause_agent_paused_rate_is_a_share_of_the_queue_rate() -> None:
    rates: list = []
    agent = PauseAgent(lambda *a: rates.append(a), 10e6, lambda port, prio: 1000 if port == 1 else 0,
                       paused_share=0.05)
    assert agent.paused_pps(1, 3) == 50
    assert agent.paused_pps(2, 3) == 61  # unlimited queue: 5% of the link's 1 KB frames (1221/s)
    for share in (0, 1, 1.5):
        with pytest.raises(ValueError, match="paused_share"):
            PauseAgent(lambda *a: None, 10e6, lambda port, prio: 250, paused_share=share)


def test_pause_agent_serves_packet_ins_with_the_ingress_port() -> None:
    p4info = build_pipeline(PROGRAM, "p4switch").p4info
    port_of = packet_in_port(p4info)
    meta_id = next(m.id for h in p4info.controller_packet_metadata
                   if h.preamble.name == "packet_in" for m in h.metadata)
    packets: queue.Queue = queue.Queue()
    for payload in (bytes(60), build_pause("02:00:00:00:00:01", {3: 0xFFFF})):
        packet = p4runtime_pb2.PacketIn(payload=payload)
        packet.metadata.add(metadata_id=meta_id, value=(5).to_bytes(2, "big"))
        packets.put(packet)
    rates: list = []
    agent = PauseAgent(lambda *a: rates.append(a), 10e6, lambda port, prio: 250)
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(packets, stop, port_of))
    thread.start()
    deadline = time.monotonic() + 5
    while not rates and time.monotonic() < deadline:
        stop.wait(0.01)
    stop.set()
    thread.join(5)
    assert rates == [(5, 3, 25)] and agent.frames == 1


def test_pause_agent_retries_a_failed_restore_and_run_carries_on() -> None:
    clock, calls, failures = Clock(), [], [RuntimeCliError("runtime CLI on port 9 closed")]

    def set_rate(port: int, prio: int, pps: int) -> None:
        calls.append(pps)
        if pps == 250 and failures:
            raise failures.pop()

    agent = PauseAgent(set_rate, 10e6, lambda port, prio: 250, clock=clock)
    agent.on_frame(2, build_pause("02:00:00:00:00:01", {3: 1000}))
    clock.t = 0.06
    with pytest.raises(RuntimeCliError):
        agent.expire()
    assert agent.is_paused(2, 3)  # still slowed: the next tick restores it
    agent.expire()
    assert calls == [25, 250, 250] and not agent.is_paused(2, 3)

    broken = PauseAgent(lambda *a: (_ for _ in ()).throw(RuntimeCliError("CLI down")),
                        10e6, lambda port, prio: 250)
    packets: queue.Queue = queue.Queue()
    packets.put(p4runtime_pb2.PacketIn(payload=build_pause("02:00:00:00:00:01", {3: 1000})))
    stop = threading.Event()
    thread = threading.Thread(target=broken.run, args=(packets, stop, lambda packet: 4))
    thread.start()
    deadline = time.monotonic() + 5
    while not broken.errors and time.monotonic() < deadline:
        stop.wait(0.01)
    assert thread.is_alive()  # the failure is recorded, the agent keeps serving
    stop.set()
    thread.join(5)
    assert broken.errors == ["CLI down"]
