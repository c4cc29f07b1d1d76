"""The lab's own programs (p4src/) compile and forward."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4switch.compiler import compile_program
from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.engine import EngineConfig
from p4switch.runtime import Entry, GroupRef, RuntimeState

ROOT = Path(__file__).resolve().parents[3]
R = "FabricIngress.routing."


@pytest.mark.parametrize("name", ["ecmp.p4", "flowlet.p4", "dlb.p4"])
def test_lab_programs_compile(name):
    program = compile_program(ROOT / "p4src" / name)
    assert "FabricIngress.routing.ipv4_lpm" in [t.name for t in program.model.tables]


@pytest.fixture(scope="module")
def ecmp():
    return compile_program(ROOT / "p4src" / "ecmp.p4")


def engine(program):
    state = RuntimeState(program.model)
    prof = state.action_profiles[R + "ecmp_selector"]
    for m in range(2):
        prof.insert_member(m + 1, ActionCall(R + "set_next_hop", (m + 1, 0x0200000000A0 + m)))
    prof.insert_group(1, [(1, 1, None), (2, 1, None)], 8)
    state.tables[R + "ipv4_lpm"].insert(
        Entry(keys=(FieldMatch("lpm", value=0x0A000200, prefix_len=24),), action=GroupRef(1)))
    return state, program.new_engine(state, EngineConfig())


def rocev2(sport: int) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") /
                 IP(src="10.0.1.1", dst="10.0.2.7", ttl=64) / UDP(sport=sport, dport=4791) /
                 bytes(12))


def test_ecmp_spreads_flows_and_rewrites(ecmp):
    state, eng = engine(ecmp)
    ports = set()
    for sport in range(49152, 49152 + 32):
        ((port, data),) = eng.process(3, rocev2(sport))
        pkt = Ether(data)
        assert pkt.dst == f"02:00:00:00:00:a{port - 1}"
        assert pkt[IP].ttl == 63
        check = pkt[IP].chksum
        del pkt[IP].chksum
        assert IP(bytes(pkt[IP])).chksum == check
        ports.add(port)
        # the same flow always takes the same path
        assert eng.process(3, rocev2(sport))[0][0] == port
    assert ports == {1, 2}
    assert state.counters["FabricIngress.port_counters.rx_port_counter"].read(3)[0] == 64


def test_packet_out_and_packet_in(ecmp):
    state, eng = engine(ecmp)
    frame = rocev2(50000)
    # packet-out: packet_out header (egress_port 2, pad) + frame, injected on the CPU port
    out = eng.process(510, (2 << 7).to_bytes(2, "big") + frame)
    assert [p for p, _ in out] == [2]
    assert out[0][1][12:] == frame[12:]
    # a frame routed to the CPU port gets the packet_in header (ingress port 3)
    prof = state.action_profiles[R + "ecmp_selector"]
    prof.modify_member(1, ActionCall(R + "set_next_hop", (510, 0x0200000000FF)))
    prof.modify_member(2, ActionCall(R + "set_next_hop", (510, 0x0200000000FF)))
    ((port, data),) = eng.process(3, frame)
    assert port == 510
    assert int.from_bytes(data[:2], "big") >> 7 == 3
    assert Ether(data[2:])[IP].dst == "10.0.2.7"
