"""A miss in a table with an action selector runs no action, as on BMv2.

p4c-bm2-ss drops the `default_action` of such a table ("Target does not support default_action
... due to action profiles") and BMv2's MatchTableIndirect::lookup returns the empty default
entry on a miss (behavioral-model src/bm_sim/match_tables.cpp); an empty group also yields the
empty action. In ecmp.p4 a packet without a route therefore keeps egress_spec 0 and its TTL: it
leaves on port 0 (where the lab has no port) instead of being dropped by `drop()`.
"""

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
TX = "FabricEgress.port_io.tx_port_counter"


@pytest.fixture(scope="module")
def ecmp():
    return compile_program(ROOT / "p4src" / "ecmp.p4")


def frame(dst: str, ttl: int = 64) -> bytes:
    return bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") /
                 IP(src="10.0.1.1", dst=dst, ttl=ttl) / UDP(sport=1234, dport=4791) / bytes(12))


def test_lpm_miss_runs_no_default_action(ecmp):
    state = RuntimeState(ecmp.model)
    eng = ecmp.new_engine(state, EngineConfig())
    sent = frame("10.9.9.9")
    ((port, data),) = eng.process(3, sent)
    assert port == 0
    assert data == sent  # TTL, MAC and checksum untouched: no action ran
    assert state.counters[TX].read(0)[0] == 1
    assert eng.process(3, frame("10.9.9.9", ttl=1)) == []  # routing's own drop() still drops


def test_empty_group_runs_no_action(ecmp):
    state = RuntimeState(ecmp.model)
    prof = state.action_profiles[R + "ecmp_selector"]
    prof.insert_member(1, ActionCall(R + "set_next_hop", (1, 0x0200000000A0)))
    prof.insert_group(1, [(1, 1, None)], 8)
    state.tables[R + "ipv4_lpm"].insert(
        Entry(keys=(FieldMatch("lpm", value=0x0A000200, prefix_len=24),), action=GroupRef(1)))
    prof.modify_group(1, [], 8)  # the last member leaves the group under the entry
    eng = ecmp.new_engine(state, EngineConfig())
    sent = frame("10.0.2.7")
    assert eng.process(3, sent) == [(0, sent)]
