"""The control-plane model of p4c's v1model samples, through build_p4info, against the P4Info
p4c wrote for them (names, ids, match fields, params, sizes, externs).

Needs a p4c checkout: P4C_TESTDATA=<p4c>/testdata .venv/bin/pytest -m slow <this file>.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.compiler import P4CompileError, compile_program
from p4switch.p4info import build_p4info

TESTDATA = Path(os.environ["P4C_TESTDATA"]) if os.environ.get("P4C_TESTDATA") else None
GOLDEN = sorted((TESTDATA / "p4_16_samples_outputs").glob("*-bmv2.p4.p4info.txtpb")) \
    if TESTDATA and (TESTDATA / "p4_16_samples_outputs").is_dir() else []

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not GOLDEN, reason="set P4C_TESTDATA to p4c's testdata")]


def summary(p: p4info_pb2.P4Info) -> list:
    out = []
    for t in p.tables:
        out.append(("table", t.preamble.name, t.preamble.id,
                    tuple((m.name, m.bitwidth, m.match_type) for m in t.match_fields),
                    tuple(sorted(a.id for a in t.action_refs)), t.size,
                    t.const_default_action_id, t.implementation_id, t.is_const_table))
    for a in p.actions:
        out.append(("action", a.preamble.name, a.preamble.id,
                    tuple((x.name, x.bitwidth) for x in a.params)))
    out += [("counter", c.preamble.name, c.size) for c in p.counters]
    out += [("direct_counter", c.preamble.name, c.direct_table_id) for c in p.direct_counters]
    out += [("meter", c.preamble.name, c.size) for c in p.meters]
    out += [("register", c.preamble.name, c.size) for c in p.registers]
    out += [("profile", c.preamble.name, c.with_selector, c.size) for c in p.action_profiles]
    out += [("digest", c.preamble.name) for c in p.digests]
    out += [("controller_header", c.preamble.name,
             tuple((m.name, m.bitwidth) for m in c.metadata))
            for c in p.controller_packet_metadata]
    return sorted(out, key=repr)


# p4c drops this register after inlining a user extern wrapper; we keep it
KNOWN = {"issue2735-bmv2.p4"}


@pytest.mark.parametrize("golden", GOLDEN, ids=[g.name.split(".p4info")[0] for g in GOLDEN])
def test_model_matches_p4c(golden: Path):
    name = golden.name.replace(".p4info.txtpb", "")
    if name in KNOWN:
        pytest.skip("known difference")
    try:
        program = compile_program(TESTDATA / "p4_16_samples" / name,
                                  include_dirs=[TESTDATA / "p4_16_samples"])
    except P4CompileError:
        pytest.skip("not compiled (unsupported or not v1model)")
    expected = text_format.Parse(golden.read_text(), p4info_pb2.P4Info())
    assert summary(build_p4info(program.model)) == summary(expected)
