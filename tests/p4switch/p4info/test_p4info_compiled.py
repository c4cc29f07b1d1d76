"""P4Info of compiled programs (re-created with the control plane of p4c samples) vs p4c's."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.compiler import compile_program
from p4switch.p4info import build_p4info, p4info_text
from p4switch.p4info_compare import diff_p4info, same_order

HERE = Path(__file__).parent
# Front-end gaps that make the model differ from p4c's (a fix shows up as XPASS).
KNOWN_GAPS: dict[str, str] = {}
PROGRAMS = [
    pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_GAPS[name], strict=False))
    if name in KNOWN_GAPS else name
    for name in sorted(p.stem for p in (HERE / "programs").glob("*-bmv2.p4"))
]


@pytest.mark.parametrize("program", PROGRAMS)
def test_compiled_program_p4info_equals_p4c(program: str) -> None:
    golden = (HERE / "golden" / f"{program}.p4info.txtpb").read_text()
    expected = text_format.Parse(golden, p4info_pb2.P4Info())
    ours = build_p4info(compile_program(HERE / "programs" / f"{program}.p4").model)
    assert diff_p4info(expected, ours) == []
    if same_order(expected, ours):
        assert p4info_text(ours) == golden
