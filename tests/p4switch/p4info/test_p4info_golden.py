"""P4Info built from hand-made models of p4c samples equals p4c's golden output, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4info_models import MODELS

from p4switch.p4info import build_p4info, p4info_text
from p4switch.p4info.compare import diff_p4info, same_order

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("program", sorted(MODELS))
def test_text_equals_p4c_golden(program: str) -> None:
    expected = (GOLDEN / f"{program}.p4info.txtpb").read_text()
    assert p4info_text(build_p4info(MODELS[program]())) == expected


@pytest.mark.parametrize("program", sorted(MODELS))
def test_golden_text_round_trips(program: str) -> None:
    # Our text parses back into the same message p4c's text describes.
    expected = text_format.Parse(
        (GOLDEN / f"{program}.p4info.txtpb").read_text(), p4info_pb2.P4Info()
    )
    assert build_p4info(MODELS[program]()) == expected


def test_compare_reports_differences_per_object() -> None:
    expected = text_format.Parse(
        (GOLDEN / "basic_routing-bmv2.p4info.txtpb").read_text(), p4info_pb2.P4Info()
    )
    model = MODELS["basic_routing-bmv2"]()
    model.tables[0].size = 10
    model.actions.pop()
    del model.tables[-1].action_refs[1]
    got = build_p4info(model)
    assert diff_p4info(expected, got) == [
        "tables egress.rewrite_mac: line 16: expected 'id: 28966416', got 'id: 21257015'",
        "tables ingress.bd: line 23: expected 'size: 65536', got 'size: 10'",
        "actions: missing egress.rewrite_src_dst_mac",
    ]
    # p4c's order is defined: the same objects in another order differ
    in_other_order = build_p4info(MODELS["basic_routing-bmv2"]())
    in_other_order.tables.reverse()
    assert diff_p4info(expected, in_other_order) == [
        "tables: order: expected ingress.bd at 0, got egress.rewrite_mac"
    ]
    assert not same_order(expected, in_other_order)
    # a missing type_info is a difference of its own
    without_type_info = build_p4info(MODELS["basic_routing-bmv2"]())
    without_type_info.ClearField("type_info")
    assert diff_p4info(expected, without_type_info) == ["type_info: expected one, got none"]
    assert diff_p4info(build_p4info(MODELS["basic_routing-bmv2"]()), expected) == []
