"""The control-plane model: names, ids and properties as p4c writes them."""

from __future__ import annotations

from pathlib import Path

from p4switch import cpmodel as cp
from p4switch.compiler import CompiledProgram, compile_program, compile_source

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = Path(__file__).resolve().parent / "programs"
_cache: dict = {}


def compiled(name: str):
    if name not in _cache:
        _cache[name] = compile_program(PROGRAMS / name)
    return _cache[name]


def test_names_of_nested_instances_and_annotations():
    m = compiled("control_flow.p4").model
    # p4c's order: sub-controls' objects where they are instantiated, then declaration order
    assert [t.name for t in m.tables] == [
        "CfIngress.first.classify", "CfIngress.second_classifier.classify",
        "CfIngress.exact_tbl", "CfIngress.ecmp", "CfIngress.ranges"]
    assert sorted(r.name for r in m.registers) == [
        "CfIngress.first.last_key", "CfIngress.second_classifier.last_key", "CfIngress.store",
        "shared"]  # top-level instances keep their plain name
    assert {a.name for a in m.actions} >= {
        "CfIngress.hit_one", "CfIngress.first.set_result", "CfIngress.second_classifier.give_up",
        "NoAction"}


def test_table_properties():
    m = compiled("control_flow.p4").model
    exact = m.table("CfIngress.exact_tbl")
    assert [(f.name, f.bitwidth, f.match_kind) for f in exact.match_fields] == [
        ("hdr.req.key", 8, "exact")]
    assert exact.default_action == cp.ActionCall("CfIngress.hit_one", (0x77,))
    assert not exact.const_default_action
    assert exact.direct_meter == "CfIngress.dmeter"
    ecmp = m.table("CfIngress.ecmp")
    assert [f.name for f in ecmp.match_fields] == ["hdr.req.key"]
    assert [(f.name, f.match_kind) for f in ecmp.selector_fields] == [("hdr.req.value", "selector")]
    assert ecmp.implementation == "CfIngress.sel"
    # no default action given and NoAction not listed: p4c adds it, @defaultonly
    assert [(r.name, r.scope) for r in ecmp.action_refs] == [
        ("CfIngress.pick", "TABLE_AND_DEFAULT"), ("NoAction", "DEFAULT_ONLY")]
    assert ecmp.default_action == cp.ActionCall("NoAction")
    classify = m.table("CfIngress.first.classify")
    assert classify.const_default_action and classify.is_const
    assert classify.const_entries[0].keys == [cp.FieldMatch("ternary", value=0x10, mask=0xF0)]
    assert classify.const_entries[3].keys == [None]
    assert classify.const_entries[1].action == cp.ActionCall("CfIngress.first.set_result", (2,))
    (prof,) = m.action_profiles
    assert (prof.name, prof.with_selector, prof.selector_algorithm, prof.selector_output_width,
            prof.size, prof.table_names) == ("CfIngress.sel", True, "crc16", 16, 64,
                                             ["CfIngress.ecmp"])
    meters = {x.name: (x.unit, x.size, x.direct_table) for x in m.meters}
    assert meters == {"CfIngress.limiter": ("packets", 4, None),
                      "CfIngress.dmeter": ("packets", 0, "CfIngress.exact_tbl")}
    hit_one = m.action("CfIngress.hit_one")
    assert [(p.name, p.bitwidth) for p in hit_one.params] == [("v", 8)]


def test_key_names_validity_slices_and_annotations():
    src = (PROGRAMS / "l3.p4").read_text().replace(
        "key = { hdr.ipv4.dstAddr: lpm; }",
        'key = { hdr.ipv4.dstAddr: lpm; hdr.udp.isValid(): exact; '
        'hdr.ipv4.diffserv[7:2]: ternary; hdr.ipv4.ttl: exact @name("hop_limit"); }')
    m = compile_source(src, str(PROGRAMS / "l3.p4")).model
    t = m.table("L3Ingress.ipv4_lpm")
    assert [(f.name, f.bitwidth, f.match_kind) for f in t.match_fields] == [
        ("hdr.ipv4.dstAddr", 32, "lpm"), ("hdr.udp.$valid$", 1, "exact"),
        ("hdr.ipv4.diffserv[7:2]", 6, "ternary"), ("hop_limit", 8, "exact")]
    assert t.direct_counter == "L3Ingress.lpm_hits"
    counters = {c.name: (c.unit, c.size, c.direct_table) for c in m.counters}
    assert counters == {"L3Ingress.rx": ("packets_and_bytes", 16, None),
                        "L3Ingress.lpm_hits": ("packets_and_bytes", 0, "L3Ingress.ipv4_lpm")}


def test_lab_program_controller_headers_and_names():
    m = compile_program(ROOT / "p4src" / "ecmp.p4").model
    heads = {h.name: [(f.name, f.bitwidth) for f in h.fields] for h in m.controller_headers}
    assert heads == {"packet_in": [("ingress_port", 9), ("_pad", 7)],
                     "packet_out": [("egress_port", 9), ("_pad", 7)]}
    assert "FabricIngress.routing.ipv4_lpm" in [t.name for t in m.tables]
    assert "FabricIngress.port_counters.rx_port_counter" in [c.name for c in m.counters]


def test_device_config_round_trip():
    program = compiled("l3.p4")
    again = CompiledProgram.from_device_config(program.device_config())
    assert again.name == "l3"
    assert again.model == program.model
    assert again.python_source == program.python_source


NAMES_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<48> b; }
struct inner_t { bit<8> x; }
struct hs_t { h_t h; }
struct m_t { @name("renamed") inner_t inner; }
parser P(packet_in pkt, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t m) { apply { } }
@name("ignoredName")
control Ing(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) never_used;
    action helper(bit<8> v) { hdr.h.a = v; }
    action calls_helper() { helper(3); }
    action direct() { hdr.h.a = 1; }
    @name("blue") action paint(@name("shade") bit<8> colour) { hdr.h.a = colour; }
    table t {
        key = { m.inner.x: exact; hdr.h.b & 0x00ff00ff00ff: ternary; }
        actions = { paint; calls_helper; }
    }
    apply {
        t.apply();
        direct();
        if (false) { calls_helper(); }
    }
}
control E(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), Ing(), E(), C(), D()) main;
"""


def test_names_follow_p4c_rules():
    m = compile_source(NAMES_PROGRAM, "names.p4").model
    t = m.table("Ing.t")  # top-level blocks are named by type; @name on them is ignored
    assert [f.name for f in t.match_fields] == ["m.renamed.x", "hdr.h.b & 0xff00ff00ff"]
    # p4c's order: top-level actions (NoAction) first, then declaration order
    assert [a.name for a in m.actions] == ["NoAction", "Ing.calls_helper", "Ing.direct",
                                           "Ing.blue"]
    assert [p.name for p in m.action("Ing.blue").params] == ["shade"]
    # declared but never used: p4c still lists it
    assert [(c.name, c.size, c.unit) for c in m.counters] == [("Ing.never_used", 4, "packets")]
