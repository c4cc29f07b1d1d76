"""ECN, PFC and telemetry logic of the lab's P4 pipeline, run in p4switch's engine with chosen
queue depths (the queues themselves are exercised by the Mininet tests)."""

from __future__ import annotations

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from experiments.framework.engine_switch import load_program
from p4switch.engine import EngineConfig
from p4switch.runtime import RuntimeState
from p4switch.runtime.cli_commands import CliInterpreter

CPU_PORT = 510
SPINE_PORT, HOST_PORT, OTHER_PORT = 1, 2, 3


class Pipeline:
    """ecmp.p4 with a route to 10.0.1.1 out of HOST_PORT and 10.0.1.2 out of OTHER_PORT."""

    def __init__(self) -> None:
        compiled = load_program("ecmp")
        self.state = RuntimeState(compiled.model)
        self.engine = compiled.new_engine(self.state, EngineConfig(cpu_port=CPU_PORT, priority_queues=8))
        self.cli = CliInterpreter(self.state)
        for port, ip in ((HOST_PORT, "10.0.1.1"), (OTHER_PORT, "10.0.1.2")):
            self.run(f"act_prof_create_member FabricIngress.routing.ecmp_selector "
                     f"FabricIngress.routing.set_next_hop {port} 0x02000a000101")
            self.run(f"table_indirect_add FabricIngress.routing.ipv4_lpm {ip}/32 => {port - 2}")
        self.run("table_add FabricIngress.traffic_class.dscp_priority "
                 "FabricIngress.traffic_class.set_priority 26 => 3")

    def run(self, line: str) -> str:
        out = self.cli.execute(line)
        assert not self.cli.failed, f"{line}: {out}"
        return out

    def pfc(self, port: int, xoff: int, xon: int, quanta: int, refresh_us: int) -> None:
        self.run(f"table_add FabricEgress.pfc.pfc_config FabricEgress.pfc.enable_pfc {port} 3 "
                 f"=> {xoff} {xon} {quanta} {refresh_us}")
        for p in (SPINE_PORT, HOST_PORT, OTHER_PORT):
            self.run(f"mirroring_add {1000 + p} {p}")

    def send(self, frame: bytes, enq_qdepth: int, deq_qdepth: int = 0,
             port: int = SPINE_PORT) -> list[tuple[int, bytes]]:
        """Ingress, then egress with the given queue depths; clones go out with depth 0."""
        out: list[tuple[int, bytes]] = []
        for item in self.engine.ingress(port, frame):
            frames, more = self.engine.egress(item, 0, enq_qdepth, deq_qdepth, 0)
            out += frames
            for clone in more:
                out += self.engine.egress(clone)[0]
        return out


def roce(dst: str = "10.0.1.1", ecn: int = 2, dscp: int = 26) -> bytes:
    return bytes(Ether(src="02:00:0a:00:00:01", dst="02:53:00:01:00:01")
                 / IP(src="10.0.0.1", dst=dst, tos=dscp << 2 | ecn, ttl=64)
                 / UDP(sport=49153, dport=4791) / bytes(40))


def ecn_of(frame: bytes) -> int:
    return Ether(frame)[IP].tos & 3


@pytest.fixture
def pipe() -> Pipeline:
    return Pipeline()


def test_forwarding_baseline(pipe: Pipeline) -> None:
    (port, frame), = pipe.send(roce(), enq_qdepth=0)
    assert port == HOST_PORT and ecn_of(frame) == 2


def test_ecn_marks_by_depth_and_never_non_ect(pipe: Pipeline) -> None:
    # kmin 5, kmax 20, pmax 0.5: depth 12 marks with probability 0.5 * 7/15
    for depth in range(6, 20):
        pipe.run(f"table_add FabricEgress.ecn.ecn_profile FabricEgress.ecn.set_mark_threshold "
                 f"{depth}->{depth} => {round(0.5 * (depth - 5) / 15 * 65535)} 1")
    pipe.run("table_add FabricEgress.ecn.ecn_profile FabricEgress.ecn.set_mark_threshold "
             "20->524287 => 65535 1")

    def marked(depth: int, ecn: int = 2, n: int = 200) -> int:
        return sum(ecn_of(pipe.send(roce(ecn=ecn), depth)[0][1]) == 3 for _ in range(n))

    assert marked(5) == 0
    assert 20 < marked(12) < 90  # expected ~47 of 200
    assert marked(20) == 200 and marked(60) == 200
    assert marked(60, ecn=0) == 0  # not ECN-capable: never marked
    assert marked(60, ecn=1) == 200  # ECT(1) too
    count = pipe.run("counter_read FabricEgress.ecn.ecn_marked_counter 2")
    assert "packets" in count and " 0 packets" not in count


def test_pfc_xoff_frame_is_bit_exact(pipe: Pipeline) -> None:
    pipe.pfc(HOST_PORT, xoff=16, xon=8, quanta=400, refresh_us=10_000)
    assert len(pipe.send(roce(), enq_qdepth=15)) == 1  # below XOFF: data only
    out = pipe.send(roce(), enq_qdepth=16)
    data = [f for p, f in out if p == HOST_PORT]
    pause = [f for p, f in out if p == SPINE_PORT]
    assert len(data) == 1 and len(pause) == 1
    frame = pause[0]
    assert frame[:6] == bytes.fromhex("0180c2000001")
    assert len(frame) == 60
    assert frame[12:14] == b"\x88\x08" and frame[14:16] == b"\x01\x01"
    assert frame[16:18] == (1 << 3).to_bytes(2, "big")  # class 3 enabled
    times = [int.from_bytes(frame[18 + 2 * i:20 + 2 * i], "big") for i in range(8)]
    assert times == [0, 0, 0, 400, 0, 0, 0, 0]
    assert frame[34:] == bytes(26)
    pfc = Ether(frame)[MACControlClassBasedFlowControl]
    assert pfc.c3_enabled == 1 and pfc.c3_pause_time == 400
    assert [getattr(pfc, f"c{i}_enabled") for i in range(8)] == [0, 0, 0, 1, 0, 0, 0, 0]


def test_pfc_refresh_and_xon(pipe: Pipeline) -> None:
    pipe.pfc(HOST_PORT, xoff=16, xon=8, quanta=400, refresh_us=1_000_000)
    assert len(pipe.send(roce(), 20)) == 2  # XOFF
    assert len(pipe.send(roce(), 20)) == 1  # still congested, refresh not due
    assert len(pipe.send(roce(), 10, deq_qdepth=9)) == 1  # between XON and XOFF: nothing
    out = pipe.send(roce(), 10, deq_qdepth=8)  # left at XON: resume
    pause = [f for p, f in out if p == SPINE_PORT]
    assert len(pause) == 1 and pause[0][18 + 6:20 + 6] == b"\x00\x00"
    assert len(pipe.send(roce(), 5, deq_qdepth=0)) == 1  # resumed already: no second XON


def test_pfc_xon_waits_for_every_congested_queue(pipe: Pipeline) -> None:
    pipe.pfc(HOST_PORT, xoff=16, xon=8, quanta=400, refresh_us=1_000_000)
    pipe.run(f"table_add FabricEgress.pfc.pfc_config FabricEgress.pfc.enable_pfc {OTHER_PORT} 3 "
             "=> 16 8 400 1000000")
    assert len(pipe.send(roce(), 20)) == 2
    assert len(pipe.send(roce("10.0.1.2"), 20)) == 2  # second congested queue, same upstream
    assert len(pipe.send(roce(), 0)) == 1  # first drains: the other still holds the pause
    out = pipe.send(roce("10.0.1.2"), 0)
    assert len(out) == 2  # the last one drains: XON


def test_pfc_off_without_config(pipe: Pipeline) -> None:
    assert len(pipe.send(roce(), 60)) == 1


def test_pfc_only_on_its_priorities(pipe: Pipeline) -> None:
    pipe.pfc(HOST_PORT, xoff=16, xon=8, quanta=400, refresh_us=10_000)  # priority 3 only
    assert len(pipe.send(roce(dscp=48), 60)) == 1  # priority 0 (no DSCP entry): never paused
    assert len(pipe.send(roce(), 60)) == 2


def test_received_pfc_frames_are_counted_and_dropped_or_punted(pipe: Pipeline) -> None:
    frame = bytes(Ether(src="02:00:0a:00:00:09", dst="01:80:c2:00:00:01")
                  / MACControlClassBasedFlowControl(c3_enabled=1, c3_pause_time=100)).ljust(60, b"\0")
    assert pipe.engine.process(SPINE_PORT, frame) == []
    pipe.run("table_set_default FabricIngress.pfc_reception.pfc_rx_mode "
             "FabricIngress.pfc_reception.punt_pfc_frames")
    (port, punted), = pipe.engine.process(SPINE_PORT, frame)
    assert port == CPU_PORT and punted[2:] == frame  # packet_in header: ingress port
    assert int.from_bytes(punted[:2], "big") >> 7 == SPINE_PORT
    assert "2 packets" in pipe.run("counter_read FabricIngress.pfc_reception.pfc_rx_counter 1")


def test_queue_telemetry_registers(pipe: Pipeline) -> None:
    pipe.send(roce(), enq_qdepth=7, deq_qdepth=3)
    pipe.send(roce(), enq_qdepth=4, deq_qdepth=2)
    cell = HOST_PORT * 8 + 3
    assert pipe.run(f"register_read FabricEgress.telemetry.queue_depth_max {cell}").endswith("7")
    assert pipe.run(f"register_read FabricEgress.telemetry.queue_depth_last {cell}").endswith("2")


def pfc_frame(quanta: int, prio: int = 3) -> bytes:
    fields = {f"c{prio}_enabled": 1, f"c{prio}_pause_time": quanta}
    return bytes(Ether(src="02:00:0a:00:00:09", dst="01:80:c2:00:00:01")
                 / MACControlClassBasedFlowControl(**fields)).ljust(60, b"\0")


def test_pause_propagates_from_a_paused_queue(pipe: Pipeline) -> None:
    """A queue paused by its downstream dequeues nothing; arrivals for it pause the upstream."""
    quantum_q10 = round(512 / 10e6 * 1e6 * 1024)  # 10 Mb/s: 51.2 µs per quantum
    for port in (SPINE_PORT, HOST_PORT, OTHER_PORT):
        pipe.run(f"table_add FabricIngress.pfc_reception.pfc_link "
                 f"FabricIngress.pfc_reception.set_quantum {port} => {quantum_q10}")
        pipe.run(f"mirroring_add {1000 + port} {port}")
    pipe.run(f"table_add FabricIngress.pfc_reception.pfc_propagation "
             f"FabricIngress.pfc_reception.propagate_pfc {HOST_PORT} 3 => 3 500 1000000")
    assert len(pipe.send(roce(), 0)) == 1  # not paused: nothing counted
    assert pipe.engine.process(HOST_PORT, pfc_frame(0xFFFF)) == []  # downstream pauses us
    assert len(pipe.send(roce(), 0)) == 1
    assert len(pipe.send(roce("10.0.1.2"), 0)) == 1  # another queue: not paused
    assert len(pipe.send(roce(), 0)) == 1
    out = pipe.send(roce(), 0)  # third arrival for the paused queue
    pause = [f for p, f in out if p == SPINE_PORT]
    assert len(out) == 2 and len(pause) == 1
    parsed = Ether(pause[0])[MACControlClassBasedFlowControl]
    assert parsed.c3_enabled == 1 and parsed.c3_pause_time == 500 and len(pause[0]) == 60
    assert len(pipe.send(roce(), 0)) == 1  # refresh not due
    relayed = pipe.engine.process(HOST_PORT, pfc_frame(700))  # downstream refreshes its pause
    assert [p for p, _ in relayed] == [SPINE_PORT]  # ... and the upstream gets it too
    assert Ether(relayed[0][1])[MACControlClassBasedFlowControl].c3_pause_time == 700
    assert pipe.engine.process(HOST_PORT, pfc_frame(0)) == []  # XON from downstream
    assert len(pipe.send(roce(), 0)) == 1
    assert len(pipe.send(roce(), 0)) == 1  # the count restarted
