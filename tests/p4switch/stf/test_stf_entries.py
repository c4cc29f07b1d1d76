"""STF table statements -> entries, following BMv2's STF runner; expectation matching."""

from __future__ import annotations

import re

import pytest

from p4switch.cpmodel import (
    Action,
    ActionRef,
    ControlPlaneModel,
    FieldMatch,
    MatchField,
    Param,
    Table,
)
from p4switch.stf import compare
from p4switch.stf import entries as ent
from p4switch.stf import syntax as s
from p4switch.stf.parser import parse_stf


def _model() -> ControlPlaneModel:
    t = Table(
        "ingress.t",
        match_fields=[
            MatchField("hdr.ipv4.dstAddr", bitwidth=32, match_kind="lpm"),
            MatchField("hdr.extra[0].h", bitwidth=16, match_kind="ternary"),
            MatchField("meta.port", bitwidth=9, match_kind="exact"),
            MatchField("hdr.tcp.$valid$", bitwidth=1, match_kind="exact"),
            MatchField("meta.opt", bitwidth=8, match_kind="optional"),
        ],
        action_refs=[ActionRef("ingress.setb1"), ActionRef("ingress.setb2"),
                     ActionRef("ingress.other_setb2"), ActionRef("NoAction")],
    )
    e = Table("egress.t2", match_fields=[MatchField("x", bitwidth=8)],
              action_refs=[ActionRef("NoAction")])
    out = Table("egress.out", action_refs=[ActionRef("NoAction")])
    actions = [
        Action("ingress.setb1", params=[Param("val", bitwidth=8), Param("port", bitwidth=9)]),
        Action("ingress.setb2"),
        Action("ingress.other_setb2"),
        Action("NoAction"),
    ]
    return ControlPlaneModel("m", tables=[t, e, out], actions=actions)


def _add(line: str) -> s.Add:
    (stmt,) = parse_stf(line)
    return stmt


def test_names_by_suffix_and_bmv2_key_defaults() -> None:
    model = _model()
    stmt = _add("add ingress.t 5 dstAddr:0x0a01**** extra$0.h:0x**ff hdr.tcp.valid:1 "
                "setb1(port:0x3ff, val:0x7f)")
    table = ent.find_table(model, stmt.table)
    assert table.name == "ingress.t"
    assert ent.build_key(table, stmt.matches) == (
        FieldMatch("lpm", value=0x0A010000, prefix_len=16),
        FieldMatch("ternary", value=0x00FF, mask=0x00FF),
        FieldMatch("exact", value=0),  # left out: 0, as BMv2's runner writes it
        FieldMatch("exact", value=1),
        None,  # optional left out: don't care
    )
    call = ent.action_call(model, table, stmt.action)
    assert call.action == "ingress.setb1"
    assert call.args == (0x7F, 0x1FF)  # in parameter order, cut to the width (as BMv2)


def test_lpm_host_bits_cleared_and_wildcards_become_dont_care() -> None:
    table = _model().table("ingress.t")
    stmt = _add("add ingress.t 1 dstAddr:0x0a0b0c0d/8 h:0x**** opt:0xff a()")
    keys = ent.build_key(table, stmt.matches)
    assert keys[0] == FieldMatch("lpm", value=0x0A000000, prefix_len=8)
    assert keys[1] is None
    assert keys[4] == FieldMatch("optional", value=0xFF)
    assert ent.build_key(table, _add("add ingress.t 1 dstAddr:0/0 a()").matches)[0] is None
    assert ent.needs_priority(table)
    assert ent.find_table(_model(), "t2").name == "egress.t2"
    assert not ent.needs_priority(_model().table("egress.t2"))


INVALID, REJECTED, UNSUPPORTED = ent.EntryError, ent.Rejected, ent.Unsupported


@pytest.mark.parametrize(
    ("line", "error", "message"),
    [
        # bmv2stf itself fails: the test is invalid.
        ("add nope x:1 a()", INVALID, "no table named 'nope'"),
        ("add t x:1 a()", INVALID, "ambiguous: ingress.t, egress.out"),  # raw suffix, as bmv2stf
        ("add ingress.t h:12 a()", INVALID, "decimal value 12 not supported for ternary"),
        ("add ingress.t nosuch:1 a()", INVALID, "has no key field 'nosuch'"),
        ("add ingress.t port:1 setb2()", INVALID, "ambiguous"),
        ("add ingress.t port:1 setb1(val:1)", INVALID, "missing parameter(s) port"),
        ("add ingress.t port:1 setb1(val:1, port:2, x:3)", INVALID, "has no parameter 'x'"),
        # simple_switch_CLI rejects the command.
        ("add ingress.t port:0x1*f a()", REJECTED, "invalid number '0x1*f'"),
        ("add ingress.t dstAddr:0x0a/40 a()", REJECTED, "prefix length 40 > bitwidth 32"),
        ("add ingress.t port:0x10000 a()", REJECTED, "0x10000 is too large for 9 bits"),
        ("add ingress.t port:1 setb1(val:256, port:1)", REJECTED, "256 is too large for 8 bits"),
        # BMv2 accepts it, p4switch cannot represent it.
        ("add ingress.t opt:0xf* a()", UNSUPPORTED, "optional match with a partial mask 0xf0"),
    ],
)
def test_failing_statements(line: str, error: type, message: str) -> None:
    model = _model()
    stmt = _add(line)
    with pytest.raises(error, match=re.escape(message)):
        table = ent.find_table(model, stmt.table)
        ent.build_key(table, stmt.matches)
        ent.action_call(model, table, stmt.action)


def test_expect_matching_and_report() -> None:
    exp = s.Expect(1, "00**FF", exact=False, line=7)
    assert compare.match_packet(exp, bytes.fromhex("0012ff99")) is None
    assert compare.match_packet(exp, bytes.fromhex("0012fe")) == 5
    assert compare.match_packet(exp, bytes.fromhex("0012")) == 4
    exact = s.Expect(1, "00**FF", exact=True, line=8)
    assert compare.match_packet(exact, bytes.fromhex("0012ff99")) == 6
    assert compare.match_packet(s.Expect(1, None), b"anything") is None
    problems = compare.compare_outputs(
        {1, 2, 3},
        {1: [exp], 2: [exp]},
        {1: [bytes.fromhex("0012fe")], 3: [b"\x01"], 9: [b"ignored: port never mentioned"]},
    )
    assert problems[0].splitlines() == [
        "port 1 packet 0: differs at byte 2 (hex digit 5): expected F, got E",
        "  expected 00**FF  (line 7)",
        "  got      0012FE",
        "                ^",
    ]
    assert problems[1].startswith("port 2: expected 1 packet(s), got 0")
    assert "missing  00**FF  (line 7)" in problems[1]
    assert problems[2].splitlines()[:2] == ["port 3: expected 0 packet(s), got 1", "  got      01"]
    assert len(problems) == 3
