"""The runtime state under the lab's real ECMP program: compiled by p4switch, programmed through
the runtime CLI, with packets through the engine (watch-port failover included)."""

from collections import Counter
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4switch.runtime import RuntimeState
from p4switch.runtime.cli_commands import CliInterpreter

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def program():
    from p4switch.compiler import compile_program

    return compile_program(ROOT / "p4src" / "ecmp.p4", include_dirs=[ROOT / "p4src" / "include"])


def flows(n):
    for sport in range(n):
        yield bytes(Ether() / IP(src="10.1.0.1", dst="10.2.0.2", ttl=64)
                    / UDP(sport=1000 + sport, dport=4791) / (b"x" * 20))


def test_ecmp_group_spreads_flows_and_fails_over(program):
    from p4switch.engine import EngineConfig

    down: set[int] = set()
    state = RuntimeState(program.model, port_up=lambda port: port not in down)
    engine = program.new_engine(state, EngineConfig(now_us=lambda: 0, log=None))
    cli = CliInterpreter(state)
    for line in ["act_prof_create_member ecmp_selector set_next_hop 1 00:00:00:00:00:01",
                 "act_prof_create_member ecmp_selector set_next_hop 2 00:00:00:00:00:02",
                 "act_prof_create_member ecmp_selector set_next_hop 3 00:00:00:00:00:03",
                 "act_prof_create_group ecmp_selector",
                 "act_prof_add_member_to_group ecmp_selector 0 0",
                 "act_prof_add_member_to_group ecmp_selector 1 0",
                 "act_prof_add_member_to_group ecmp_selector 2 0",
                 "table_indirect_add_with_group ipv4_lpm 10.0.0.0/8 => 0"]:
        out = cli.execute(line)
        assert not cli.failed, (line, out)

    def ports():
        seen = Counter()
        chosen = []
        for pkt in flows(150):
            out = engine.process(5, pkt)
            assert len(out) == 1
            seen[out[0][0]] += 1
            chosen.append(out[0][0])
        return seen, chosen

    seen, first = ports()
    assert set(seen) == {1, 2, 3} and min(seen.values()) > 15
    assert ports()[1] == first  # a flow keeps its next hop

    profile = state.action_profile("ecmp_selector")
    profile.modify_group(0, [(0, 1, None), (1, 1, 2), (2, 1, None)])  # member 1 watches port 2
    down.add(2)
    seen, during = ports()
    assert set(seen) == {1, 3}
    down.clear()
    assert ports()[1] == first

    # a miss runs no action, as on BMv2 (no default action for a table with a selector):
    # egress_spec stays 0, the frame is untouched
    miss = bytes(Ether() / IP(src="10.1.0.1", dst="192.168.0.1", ttl=64) / UDP())
    assert engine.process(5, miss) == [(0, miss)]
