"""P4Info of p4c's v1model samples, compiled by p4switch, against the P4Info p4c wrote for them:
equal message and text (order, ids, sizes, defaults, specs, type_info).

Needs a p4c checkout: P4C_TESTDATA=<p4c>/testdata .venv/bin/pytest -m slow <this file>.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.compiler import P4CompileError, compile_program
from p4switch.p4info import build_p4info, p4info_text
from p4switch.p4info.compare import diff_p4info

TESTDATA = Path(os.environ["P4C_TESTDATA"]) if os.environ.get("P4C_TESTDATA") else None
GOLDEN = sorted((TESTDATA / "p4_16_samples_outputs").glob("*-bmv2.p4.p4info.txtpb")) \
    if TESTDATA and (TESTDATA / "p4_16_samples_outputs").is_dir() else []

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not GOLDEN, reason="set P4C_TESTDATA to p4c's testdata")]

# Front-end gaps that make the P4Info differ from p4c's (a fix shows up as XPASS).
KNOWN = {
    "issue2735-bmv2.p4": "p4c drops this register after inlining a user extern wrapper",
    "issue1739-bmv2.p4": "type names of keys declared through a typedef of a new type",
}


@pytest.mark.parametrize("golden", GOLDEN, ids=[g.name.split(".p4info")[0] for g in GOLDEN])
def test_p4info_equals_p4c(golden: Path):
    name = golden.name.replace(".p4info.txtpb", "")
    if name in KNOWN:
        pytest.xfail(KNOWN[name])
    try:
        program = compile_program(TESTDATA / "p4_16_samples" / name,
                                  include_dirs=[TESTDATA / "p4_16_samples"])
    except P4CompileError:
        pytest.skip("not compiled (unsupported or not v1model)")
    text = golden.read_text()
    expected = text_format.Parse(text, p4info_pb2.P4Info())
    ours = build_p4info(program.model)
    assert diff_p4info(expected, ours) == []
    assert p4info_text(ours) == text
