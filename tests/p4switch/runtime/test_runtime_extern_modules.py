"""The stateful externs' modules (`p4switch.externs`): one program declaring each of them,
compiled, run with packets, then seen through every part the registry feeds: the runtime
state, P4Info, P4Runtime Read/Write and the runtime CLI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2

from p4switch.compiler import compile_source
from p4switch.engine import EngineConfig
from p4switch.externs import CLI_COMMANDS, ENTITIES, EXTERNS
from p4switch.p4info import build_p4info
from p4switch.p4info.index import P4InfoIndex
from p4switch.runtime import RuntimeState
from p4switch.runtime.cli_commands import CliInterpreter
from p4switch.server.entities import EntityCodec

V1MODEL = Path(__file__).resolve().parents[3] / "p4switch" / "p4include" / "v1model.p4"

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { bit<32> seen; bit<2> color; bit<2> dcolor; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(4, CounterType.packets_and_bytes) port_counter;
    direct_counter(CounterType.packets_and_bytes) fwd_counter;
    meter(4, MeterType.packets) port_meter;
    direct_meter<bit<2>>(MeterType.bytes) fwd_meter;
    register<bit<32>>(4) seen;
    action fwd(bit<9> port) { sm.egress_spec = port; fwd_meter.read(meta.dcolor); }
    table t {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; }
        counters = fwd_counter;
        meters = fwd_meter;
        default_action = fwd(3);
    }
    apply {
        port_counter.count((bit<32>)sm.ingress_port);
        port_meter.execute_meter((bit<32>)sm.ingress_port, meta.color);
        seen.read(meta.seen, (bit<32>)sm.ingress_port);
        seen.write((bit<32>)sm.ingress_port, meta.seen + 1);
        t.apply();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

FRAME = bytes.fromhex("0000000000aa" "000000000001" "0800") + bytes(50)


@pytest.fixture(scope="module")
def program():
    return compile_source(PROGRAM, "extern_modules.p4")


@pytest.fixture
def switch(program):
    state = RuntimeState(program.model)
    engine = program.new_engine(state, EngineConfig(now_us=lambda: 0, log=None))
    cli = CliInterpreter(state)
    out = cli.execute("table_add t fwd 0x0000000000aa => 2")
    assert not cli.failed and out.endswith("Entry has been added with handle 0"), out
    for port in (1, 1, 2):
        assert [p for p, _ in engine.process(port, FRAME)] == [2]
    return state, cli


def test_every_module_is_a_v1model_extern_with_its_methods() -> None:
    text = V1MODEL.read_text()
    for name, kind in EXTERNS.items():
        body = re.search(rf"extern {name}(<[^>]*>)? \{{(.*?)\n\}}", text, re.S)
        assert body is not None, name
        for method in kind.methods:
            assert re.search(rf"\b{method}(<[^>]*>)?\(", body.group(2)), (name, method)
    assert set(ENTITIES) == {"counter_entry", "direct_counter_entry", "meter_entry",
                             "direct_meter_entry", "register_entry"}


def test_state_and_p4info_come_from_the_modules(program, switch) -> None:
    state, _ = switch
    assert set(state.externs) == {"counter", "meter", "register"}
    assert state.externs["counter"]["I.port_counter"].read(1) == (2, 128)
    assert state.externs["register"]["I.seen"].read(1) == 2
    assert state.table("t").by_handle(0).direct_counter == [3, 192]
    p4info = build_p4info(program.model)
    assert [c.preamble.name for c in p4info.counters] == ["I.port_counter"]
    assert [c.preamble.name for c in p4info.direct_counters] == ["I.fwd_counter"]
    assert [m.preamble.name for m in p4info.meters] == ["I.port_meter"]
    assert [m.preamble.name for m in p4info.direct_meters] == ["I.fwd_meter"]
    assert [r.preamble.name for r in p4info.registers] == ["I.seen"]
    (table,) = p4info.tables
    assert list(table.direct_resource_ids) == [p4info.direct_counters[0].preamble.id,
                                               p4info.direct_meters[0].preamble.id]


def test_p4runtime_entities_go_to_the_modules(program, switch) -> None:
    state, _ = switch
    p4info = build_p4info(program.model)
    codec = EntityCodec(p4info, P4InfoIndex(p4info), program.model, state)
    read = p4runtime_pb2.Entity()
    read.counter_entry.counter_id = p4info.counters[0].preamble.id
    read.counter_entry.index.index = 1
    (got,) = codec.read(read)
    assert (got.counter_entry.data.packet_count, got.counter_entry.data.byte_count) == (2, 128)
    read = p4runtime_pb2.Entity()
    read.direct_counter_entry.SetInParent()
    (got,) = codec.read(read)
    assert got.direct_counter_entry.data.packet_count == 3
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    update.entity.meter_entry.meter_id = p4info.meters[0].preamble.id
    update.entity.meter_entry.index.index = 2
    update.entity.meter_entry.config.cir = 1000
    update.entity.meter_entry.config.pir = 2000
    update.entity.meter_entry.config.cburst = update.entity.meter_entry.config.pburst = 4
    codec.write(update)
    assert state.meter("port_meter").config(2).pir == 2000
    read = p4runtime_pb2.Entity()
    read.register_entry.SetInParent()
    with pytest.raises(Exception, match="Register reads are not supported yet"):
        codec.read(read)


def test_cli_commands_come_from_the_modules(switch) -> None:
    _, cli = switch
    assert set(CLI_COMMANDS) <= set(cli.commands())
    assert cli.execute("counter_read port_counter 1") == "port_counter[1]= (128 bytes, 2 packets)"
    assert cli.execute("counter_read fwd_counter 0") == \
        "this is the direct counter for table I.t\nfwd_counter[0]= (192 bytes, 3 packets)"
    assert cli.execute("register_read seen 2") == "seen[2]= 1"
    cli.execute("meter_set_rates port_meter 0 0.5:10 1:20")
    assert not cli.failed
    assert cli.execute("meter_get_rates port_meter 0") == \
        "0: info rate = 0.5, burst size = 10\n1: info rate = 1.0, burst size = 20"
