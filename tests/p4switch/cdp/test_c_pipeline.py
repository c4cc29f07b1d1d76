"""The whole pipeline in C (p4switch/cdp/pipeline.py: generated parser, controls and deparser,
c/engine.c): the lab's programs give what their Python pipeline gives, frame for frame and
counter for counter, with the entries the controller would write; what the C back end does not
generate is refused by name."""

from __future__ import annotations

import pytest

from experiments.framework.engine_switch import EngineSwitch, load_program
from p4switch.cdp.gen.program import CUnsupported
from p4switch.cdp.pipeline import CPipeline
from p4switch.compiler import compile_source
from p4switch.runtime import RuntimeState
from tests.differential.packets import FLOWS, cases, roce

UPLINKS = [2, 3, 4]
KNOBS: dict[str, dict] = {"ecmp": {}, "flowlet": {"flowlet_gap_us": 1000},
                          "dlb": {"host_ports": [1]}, "qdlb": {"host_ports": [1]}}


def state_of(sw: EngineSwitch) -> dict[str, list]:
    """Every counter's and register's cells, and every entry's direct counter."""
    out: dict[str, list] = {}
    for name, counter in sw.state.counters.items():
        out[name] = [counter.read(i) for i in range(counter.size)]
    for name, register in sw.state.registers.items():
        out[name] = [register.get(i) for i in range(register.size)]
    for name, table in sw.state.tables.items():
        out[name] = [list(e.direct_counter) for e in table.entries()]
    return out


@pytest.mark.parametrize("program", KNOBS)
def test_lab_program_in_c_matches_python(program: str) -> None:
    """The differential corpus (RoCEv2 with and without reorder tags, PFC, TTL edges, bad
    checksums, truncated and foreign frames), then RoCEv2 leaving queues of every depth (ECN
    marking, telemetry), through the Python pipeline and the C one of a switch each, with the
    same entries and the same clock."""
    compiled = load_program(program)
    py, c = (EngineSwitch(compiled, UPLINKS, seed=5, **KNOBS[program]) for _ in range(2))
    pipeline = CPipeline(compiled, c.state, c.engine.config)
    sent = 0
    for case in cases():
        for frame in case.frames:
            py.now_us += 700
            c.now_us += 700
            want = py.engine.process(case.port, frame)
            assert pipeline.process(case.port, frame) == want, \
                f"{program}.p4, {case.name}: frame {sent} differs"
            sent += 1
    for depth in range(0, 400, 7):
        frame = roce(FLOWS[depth % len(FLOWS)], psn=depth)
        py.now_us += 300
        c.now_us += 300
        want = [py.engine.egress(q, enq_timestamp=py.now_us, enq_qdepth=depth,
                                 deq_qdepth=depth // 2, deq_timedelta=depth * 11)
                for q in py.engine.ingress(1, frame)]
        got = [pipeline.egress(q, enq_timestamp=c.now_us, enq_qdepth=depth,
                               deq_qdepth=depth // 2, deq_timedelta=depth * 11)
               for q in pipeline.ingress(1, frame)]
        assert [(frames, len(new)) for frames, new in got] == \
            [(frames, len(new)) for frames, new in want], \
            f"{program}.p4: RoCEv2 at queue depth {depth} differs"
    assert sent > 50
    assert state_of(py) == state_of(c)
    assert any(any(cells) for cells in state_of(c).values())
    assert pipeline.internal_errors == 0


CLONES = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { @field_list(1) bit<8> mark; bit<8> other; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.mark = 7;
        meta.other = 9;
        if (hdr.eth.type == 1) { clone_preserving_field_list(CloneType.I2E, 5, 1); }
        if (hdr.eth.type == 2) { sm.mcast_grp = 3; return; }
        if (hdr.eth.type == 3 && sm.instance_type == 0) { resubmit_preserving_field_list(1); }
        sm.egress_spec = 2;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.eth.src = (bit<48>) meta.mark << 8 | (bit<48>) meta.other;
        hdr.eth.dst = (bit<48>) sm.instance_type << 16 | (bit<48>) sm.egress_rid;
        if (hdr.eth.type == 4 && sm.instance_type == 0) {
            clone_preserving_field_list(CloneType.E2E, 5, 1);
            truncate(20);
        }
    }
}
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_clones_multicast_resubmit_and_truncate_in_c() -> None:
    """The engine's replication: clone sessions and multicast groups (their copies in order,
    egress_rid), preserved field lists, resubmit, truncate, as the Python engine does them."""
    program = compile_source(CLONES, "clones.p4")
    states = [RuntimeState(program.model) for _ in range(2)]
    for state in states:
        state.pre.insert_clone_session(5, [(6, 0), (7, 1)])
        state.pre.insert_multicast_group(3, [(1, 11), (4, 12), (4, 13)])
    engine = program.new_engine(states[0])
    pipeline = CPipeline(program, states[1])
    for kind in range(6):
        frame = bytes(12) + kind.to_bytes(2, "big") + bytes(range(40))
        want = engine.process(9, frame)
        assert pipeline.process(9, frame) == want, f"ether type {kind}"
        assert want, f"ether type {kind}: no frame at all"


def test_what_c_does_not_run_is_named() -> None:
    source = CLONES.replace("meta.other = 9;",
                            "for (bit<8> i = 0; i < 9; i = i + 1) { meta.other = i; }")
    program = compile_source(source, "loops.p4")
    with pytest.raises(CUnsupported, match=r"loops\.p4:\d+:\d+: unsupported in C: For "):
        CPipeline(program, RuntimeState(program.model))
