"""The mechanisms' descriptions (`mechanisms/`) are the programs' real names and constants: each
program's P4Info holds exactly the names its mechanisms describe, every knob's table, match
fields and parameters exist, and the constants shared with the P4 source agree with it."""

from __future__ import annotations

import re
from functools import cache

import pytest

from controller.pipeline import build_pipeline
from controller.schema import Schema
from mechanisms import (
    LB_MODES,
    MECHANISMS,
    P4_INCLUDE,
    P4SRC,
    PROGRAMS,
    MechanismError,
    ecn,
    flow,
    mechanism,
    p4_name,
    pfc,
    port_io,
    program,
    program_path,
    telemetry,
    telemetry_items,
)

KINDS = ("tables", "actions", "action_profiles", "counters", "registers", "direct_counters",
         "meters")


@cache
def schema(name: str) -> Schema:
    return Schema(build_pipeline(PROGRAMS[name].path, "p4switch").p4info)


def p4_const(file: str, name: str) -> str:
    """The value of `const ... NAME = value;` or `#define NAME value` in p4src/include/<file>."""
    text = (P4_INCLUDE / file).read_text()
    found = re.search(rf"(?:const\s+\S+\s+{name}\s*=\s*([^;]+);|#define\s+{name}\s+(\S+))", text)
    assert found, f"{name} not in {file}"
    return (found.group(1) or found.group(2)).strip()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_has_exactly_the_names_its_mechanisms_describe(name: str) -> None:
    p4info = schema(name).p4info
    compiled = {item.preamble.name for kind in KINDS for item in getattr(p4info, kind)}
    described = PROGRAMS[name].names()
    assert described - compiled == set(), "described, not in the program"
    assert compiled - described == {"NoAction"}, "in the program, described by no mechanism"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_knob_of_a_program_fits_its_p4info(name: str) -> None:
    s = schema(name)
    for m in PROGRAMS[name].mechanisms:
        for knob in m.knobs:
            table = s.table(knob.table)
            assert [s.match_field(knob.table, f).name for f in knob.match] == \
                [mf.name for mf in table.match_fields], knob.name
            assert [s.param(knob.action, p).name for p in knob.params] == \
                [p.name for p in s.action(knob.action).params], knob.name
            assert knob.action in {s.name_of(ref.id) for ref in table.action_refs}, knob.name
        for item in m.telemetry:
            assert item.p4_name in (m.counters if item.kind == "counter" else m.registers)


def test_descriptions_are_consistent_and_their_controls_are_instantiated() -> None:
    main = (P4_INCLUDE / "fabric_main.p4").read_text()
    assert len({m.name for m in MECHANISMS}) == len(MECHANISMS)
    for m in MECHANISMS:
        assert m.problems() == []
        assert m.include.is_file() and m.include.parent == P4_INCLUDE
        source = m.include.read_text()
        for control in m.controls:
            assert re.search(rf"\bcontrol\s+{control.type_name}\s*\(", source), control
            pipe, local = control.instance.split(".")
            body = main[main.index(f"control {pipe}("):]
            assert re.search(rf"\b{control.type_name}\(\)\s+{local};", body), control
        for needed in m.needs:
            assert mechanism(needed).name == needed


def test_programs_and_paths() -> None:
    assert LB_MODES == ("ecmp", "flowlet", "dlb", "qdlb")
    assert {p.stem for p in P4SRC.glob("*.p4")} == set(PROGRAMS)
    assert program_path("ecmp") == program_path("ecmp.p4") == P4SRC / "ecmp.p4"
    for name in ("nope", "../p4src/ecmp", "include/ecn"):
        with pytest.raises(MechanismError, match=r"no P4 program .* \(there are: dlb, ecmp, "):
            program_path(name)
    with pytest.raises(MechanismError, match="no program named 'nope'"):
        program("nope")
    assert program("qdlb").has("tagging") and not program("ecmp").has("tagging")
    for name, prog in PROGRAMS.items():
        define = f"LB_MODE_{name.upper()}"
        assert f"#define {define}" in prog.path.read_text()


def test_names_by_suffix_and_telemetry_by_key() -> None:
    assert p4_name("tx_port_counter") == port_io.TX_PORT_COUNTER \
        == "FabricEgress.port_io.tx_port_counter"
    with pytest.raises(MechanismError, match="2 .*pause_sent_at"):
        p4_name("pause_sent_at")
    with pytest.raises(MechanismError, match="no control-plane names end in 'nothing'"):
        p4_name("nothing")
    with pytest.raises(MechanismError, match="no knob of mechanism ecn named 'x'"):
        ecn.MECHANISM.knob("x")
    items = telemetry_items()
    assert items["ecn_marked"].p4_name == ecn.MARKED_COUNTER
    assert [k for k, t in items.items() if t.reset_after_read] == ["depth_max", "delay_max_us"]


def test_constants_agree_with_the_p4_source() -> None:
    assert int(p4_const("pfc.p4", "PFC_SESSION_BASE")) == pfc.SESSION_BASE
    assert int(p4_const("pfc.p4", "PFC_DST_MAC"), 16) == int(pfc.PFC_DST_MAC.replace(":", ""), 16)
    assert int(p4_const("headers.p4", "ETHERTYPE_MAC_CONTROL"), 16) == pfc.ETHERTYPE_MAC_CONTROL
    assert int(p4_const("headers.p4", "MAC_CONTROL_PFC"), 16) == pfc.PFC_OPCODE
    assert int(p4_const("flow.p4", "FLOW_TABLE_SIZE")) == flow.FLOW_TABLE_SIZE
    assert int(p4_const("telemetry.p4", "TELEMETRY_QUEUES")) == telemetry.CELLS
    assert telemetry.queue_cell(63, 7) == telemetry.CELLS - 1
    assert re.search(rf"size = {ecn.TABLE_SIZE};", ecn.MECHANISM.include.read_text())


def test_the_targets_own_pfc_constants_agree() -> None:
    """p4switch stands alone and keeps its own copy (its MAC's PFC reception)."""
    from p4switch.switch import pfc as switch_pfc

    ours = bytes.fromhex(pfc.PFC_DST_MAC.replace(":", ""))
    type_opcode = (pfc.ETHERTYPE_MAC_CONTROL << 16 | pfc.PFC_OPCODE).to_bytes(4, "big")
    assert (ours, type_opcode) == (switch_pfc.PFC_DST, switch_pfc.PFC_TYPE_OPCODE)
    assert pfc.pause_seconds(1000, 10e6) == pytest.approx(0.0512)
    assert pfc.quantum_us_q10(10e6) == round(51.2 * 1024)
