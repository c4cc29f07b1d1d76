"""The STF parser: every statement form of p4c's STF (BMv2 dialect), and its errors."""

from __future__ import annotations

import pytest

from p4switch.stf import syntax as s
from p4switch.stf.parser import StfSyntaxError, parse_stf


def one(text: str) -> s.Statement:
    statements = parse_stf(text)
    assert len(statements) == 1
    return statements[0]


def test_comments_blank_lines_and_line_numbers() -> None:
    statements = parse_stf("# header\n\n   \nwait  # trailing comment\nWAIT\n")
    assert [type(x) for x in statements] == [s.Wait, s.Wait]
    assert [x.line for x in statements] == [4, 5]


def test_packet_hex_spread_over_words() -> None:
    stmt = one("packet 3 0001 02 0a0B ff\n")
    assert stmt == s.Packet(3, bytes.fromhex("0001020a0bff"), line=1)


def test_expect_wildcards_exact_and_empty() -> None:
    assert one("expect 1 00 ** 1* $") == s.Expect(1, "00**1*", exact=True, line=1)
    assert one("Expect 2 abcd") == s.Expect(2, "ABCD", exact=False, line=1)
    assert one("expect 5") == s.Expect(5, None, exact=False, line=1)


def test_add_with_priority_masks_lpm_and_entry_id() -> None:
    stmt = one("add ingress.t 10 h.a:0x0a** h.$valid$:1 ipv4.dstAddr:0x0a000000/8 "
               "extra$0.h:0b1*0 c.act(port:2, val:0x7f) = E1")
    assert isinstance(stmt, s.Add)
    assert stmt.table == "ingress.t"
    assert stmt.priority == 10
    assert stmt.matches == [
        s.KeyMatch("h.a", "0x0a**"),
        s.KeyMatch("h.$valid$", "1"),
        s.KeyMatch("ipv4.dstAddr", "0x0a000000", "8"),
        s.KeyMatch("extra$0.h", "0b1*0"),
    ]
    assert stmt.action == s.ActionSpec("c.act", [("port", "2"), ("val", "0x7f")])
    assert stmt.entry_id == "E1"


def test_add_without_priority_array_names_and_no_args() -> None:
    stmt = one('ADD t hdr.x[1].f:5 "quoted.name":7 NoAction()')
    assert stmt.priority is None
    assert [m.field for m in stmt.matches] == ["hdr.x[1].f", "quoted.name"]
    assert stmt.action == s.ActionSpec("NoAction", [])


def test_leading_dot_of_absolute_names_dropped() -> None:
    stmt = one("add .ingress.t .h.a:1 .NoAction()")
    assert (stmt.table, stmt.matches[0].field, stmt.action.name) == ("ingress.t", "h.a", "NoAction")


def test_setdefault_remove_check_counter_no_packet() -> None:
    assert one("setdefault c.t c.a(x:1)") == s.SetDefault("c.t", s.ActionSpec("c.a", [("x", "1")]),
                                                          line=1)
    assert one("remove all") == s.Remove(line=1)
    assert one("check_counter cnt(3) packets == 2") == s.CheckCounter("cnt", "3", "packets", "==",
                                                                      2, line=1)
    assert one("check_counter cnt($E1)") == s.CheckCounter("cnt", "$E1", line=1)
    assert one("check_counter cnt(1) bytes >= 64").op == ">="
    assert one("no_packet") == s.NoPacket(line=1)


@pytest.mark.parametrize(
    "line",
    [
        "mirroring_add 5 4",
        "mirroring_add_mc 10 5",
        "mirroring_delete 5",
        "mirroring_get 10",
        "mc_mgrp_create 1",
        "mc_node_create 0 6 7 8",
        "mc_node_update 0 6",
        "mc_node_associate 1 0",
        "counter_read ingress.c 1",
        "counter_write ingress.c 1 10 1000",
        "register_read cIngress.regfile 1",
        "register_write cIngress.regfile 5 100",
        "register_reset cIngress.regfile",
        "meter_get_rates cIngress.meter0 1",
        "meter_set_rates cIngress.meter0 2 0.000005:4 0.00002:5",
        "meter_array_set_rates cIngress.meter0 0.000006:7 0.00008:9",
    ],
)
def test_cli_pass_throughs(line: str) -> None:
    stmt = one(line.upper().split()[0] + " " + line.split(" ", 1)[1])
    assert isinstance(stmt, s.CliCommand)
    assert stmt.text() == line


def test_all_errors_reported_with_positions() -> None:
    text = "\n".join([
        "packet 1 0g",            # 1: bad hex
        "frobnicate 1",           # 2: unknown statement
        "add t x:1 a(p:1",        # 3: missing ')'
        "expect 1 00$11",         # 4: '$' not last
        "packet 2 abc",           # 5: odd number of digits
        "mc_node_create 1",       # 6: missing ports
        "add t a(p:1)",           # 7: no key match
        "check_counter c(1) packets ~ 3",  # 8
        "packet 1 00**",          # 9: wildcard in a packet
    ])
    with pytest.raises(StfSyntaxError) as info:
        parse_stf(text, "t.stf")
    errors = info.value.errors
    assert [e.split(":")[1] for e in errors] == [str(n) for n in range(1, 10)]
    assert errors[0] == "t.stf:1:11: error: invalid packet data 'g'"
    assert "unknown statement 'frobnicate'" in errors[1]
    assert "expected ',' or ')', found end of line" in errors[2]
    assert "'$' must be the last" in errors[3]
    assert "odd number of hex digits" in errors[4]
    assert "mc_node_create: bad argument 2" in errors[5]
    assert "at least one key match" in errors[6]
    assert "unexpected character '~'" in errors[7]
    assert "only allowed in expect" in errors[8]
