"""Pipeline artefacts for both targets, and the routing names the controller needs in them."""

from __future__ import annotations

import pytest

from controller.intent import Intent
from controller.pipeline import PipelineError, build_pipeline
from controller.schema import Schema
from mechanisms import P4SRC
from targets import BMV2, P4SWITCH
from tests.controller.fabrics import PROGRAM, ecmp_pipeline


def test_p4switch_pipeline_has_what_the_controller_programs():
    pipeline = ecmp_pipeline()
    intent = Intent(Schema(pipeline.p4info))  # raises, naming what is missing, otherwise
    assert intent.profile.with_selector
    assert intent.lpm.implementation_id == intent.profile.preamble.id
    assert pipeline.device_config
    assert pipeline.cookie == ecmp_pipeline().cookie  # same program, same cookie


def test_another_program_has_another_cookie():
    other = P4SRC / "flowlet.p4"
    if not other.exists():
        pytest.skip("p4src/flowlet.p4 is not in the tree")
    assert build_pipeline(other, "p4switch").cookie != ecmp_pipeline().cookie


def test_bad_input_is_named():
    with pytest.raises(PipelineError, match="nosuch.p4 does not exist"):
        build_pipeline("nosuch.p4", "p4switch")
    with pytest.raises(PipelineError, match="unknown target 'tofino'"):
        build_pipeline(PROGRAM, "tofino")


def test_the_pipeline_carries_its_target():
    assert ecmp_pipeline().target is P4SWITCH
    assert build_pipeline(PROGRAM, "auto").target is P4SWITCH


@pytest.mark.bmv2
def test_bmv2_pipeline_matches_the_p4switch_p4info():
    bmv2 = build_pipeline(PROGRAM, BMV2)
    assert bmv2.target is BMV2
    ours = ecmp_pipeline()
    Intent(Schema(bmv2.p4info))
    assert {t.preamble.name: t.preamble.id for t in bmv2.p4info.tables} == {
        t.preamble.name: t.preamble.id for t in ours.p4info.tables}
