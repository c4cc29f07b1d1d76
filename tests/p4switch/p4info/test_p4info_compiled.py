"""P4Info of compiled programs vs the P4Info p4c-bm2-ss wrote for them, message and text equal.

The programs re-create the control plane of p4c samples (`*-bmv2.p4`) or exercise one rule of
p4c's serializer (unused externs, extern function calls and `type_info`, action order); each
has p4c's output in golden/. No comparison is lenient: order, sizes, defaults, specs and
`type_info` (present, empty or absent) all count.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.compiler import compile_program
from p4switch.p4info import build_p4info, p4info_text
from p4switch.p4info.compare import diff_p4info

HERE = Path(__file__).parent
PROGRAMS = sorted(
    p.stem for p in (HERE / "programs").glob("*.p4")
    if (HERE / "golden" / f"{p.stem}.p4info.txtpb").is_file()
)


def test_every_program_has_a_golden() -> None:
    includes = {"common_v1"}
    assert {p.stem for p in (HERE / "programs").glob("*.p4")} - includes == set(PROGRAMS)


@pytest.mark.parametrize("program", PROGRAMS)
def test_compiled_program_p4info_equals_p4c(program: str) -> None:
    golden = (HERE / "golden" / f"{program}.p4info.txtpb").read_text()
    expected = text_format.Parse(golden, p4info_pb2.P4Info())
    ours = build_p4info(compile_program(HERE / "programs" / f"{program}.p4").model)
    assert diff_p4info(expected, ours) == []
    assert ours == expected
    assert p4info_text(ours) == golden


def _compiled(program: str) -> p4info_pb2.P4Info:
    return build_p4info(compile_program(HERE / "programs" / f"{program}.p4").model)


def test_unused_externs_are_listed() -> None:
    p4info = _compiled("unused_externs")
    assert [c.preamble.name for c in p4info.counters] == [
        "top_ctr", "IG.unused_ctr", "IG.used_ctr", "EG.eg_ctr"]
    assert [(m.preamble.name, m.size) for m in p4info.meters] == [
        ("IG.unused_mtr", 4), ("IG.sub.sub_mtr", 3)]
    assert [r.preamble.name for r in p4info.registers] == [
        "top_reg", "P.parser_reg", "IG.unused_reg", "IG.used_reg", "IG.sub.sub_reg"]
    # unused direct counters and meters: not listed, yet they make EG.t's alias ambiguous
    assert [c.preamble.name for c in p4info.direct_counters] == ["EG.t_ctr"]
    assert not p4info.direct_meters
    assert p4info.tables[0].preamble.alias == "EG.t"


@pytest.mark.parametrize(
    ("program", "has_type_info"),
    [("extern_function_only", True), ("extern_functions", True), ("no_type_info", False),
     ("parser_extern_calls", False)],
)
def test_type_info_follows_extern_function_calls(program: str, has_type_info: bool) -> None:
    p4info = _compiled(program)
    assert p4info.HasField("type_info") is has_type_info
    assert p4info.type_info.ByteSize() == 0  # empty either way
