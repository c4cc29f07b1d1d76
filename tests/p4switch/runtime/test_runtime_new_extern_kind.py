"""Adding a stateful extern is one module: a kind defined here, in the test alone, and listed
in `EXTERNS` is declared, compiled, run with packets and holds its state, without an edit to
the code generator, the control-plane model or `RuntimeState`."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from p4switch import externs
from p4switch.compiler import P4CompileError, compile_source
from p4switch.engine import EngineConfig
from p4switch.externs.base import ExternKind
from p4switch.p4info import build_p4info
from p4switch.runtime import RuntimeState

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
extern tally {
    tally(bit<32> size);
    void bump(in bit<32> index);
}
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    tally(4) per_port;
    apply {
        per_port.bump((bit<32>)sm.ingress_port);
        sm.egress_spec = 2;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
FRAME = bytes.fromhex("020000000001" "020000000002" "0800") + bytes(50)


@dataclass
class Tally:  # its control-plane model entry
    name: str
    size: int


class TallyCells:  # its runtime state
    def __init__(self, size: int) -> None:
        self.cells = [0] * size

    def bump(self, index: int) -> None:
        if 0 <= index < len(self.cells):
            self.cells[index] += 1


def _declare(ctx, sym, name, annos, eid, args, key):
    ctx.model.add("tallies", Tally(name, args[0]), key)
    return ctx.program.closure(f"_state.externs['tally'][{name!r}]", "T")


def _bump(ctx, c, obj, env):
    (index,) = ctx.extern.args(c)
    ctx.em.line(f"{ctx.extern.instance(obj, env)}.bump({ctx.expr.ex(index, env)})")


TALLY = ExternKind(type_name="tally", declare=_declare, methods={"bump": _bump},
                   state_objects=lambda model: model.instances("tallies"),
                   new_state=lambda t: TallyCells(t.size))


@pytest.fixture
def with_tally(monkeypatch):
    monkeypatch.setitem(externs.EXTERNS, "tally", TALLY)


def test_a_kind_listed_in_externs_is_compiled_and_keeps_state(with_tally) -> None:
    program = compile_source(PROGRAM, "tally.p4")
    assert program.model.instances("tallies") == [Tally("I.per_port", 4)]
    state = RuntimeState(program.model)
    engine = program.new_engine(state, EngineConfig(now_us=lambda: 0, log=None))
    for port in (1, 1, 3):
        assert [p for p, _ in engine.process(port, FRAME)] == [2]
    assert state.externs["tally"]["I.per_port"].cells == [0, 2, 0, 1]
    build_p4info(program.model)  # a kind without a P4Info entry leaves P4Info alone


def test_without_its_module_the_extern_is_a_clear_error() -> None:
    with pytest.raises(P4CompileError, match=r"tally.p4:\d+:\d+: error: unsupported: tally.bump"):
        compile_source(PROGRAM, "tally.p4")
