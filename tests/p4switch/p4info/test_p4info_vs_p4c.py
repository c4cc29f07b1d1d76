"""p4switch's P4Info against the P4Info real p4c-bm2-ss writes for the same source, now.

Every program is compiled by both; the messages must be equal field for field, in p4c's order
(no canonical reordering is needed: p4c's order is defined, and the maps of type_info compare
as maps), and the text p4switch writes must be p4c's byte for byte. Covers the lab programs,
the re-created p4c samples and the programs of the serializer's rules (unused externs, extern
function calls and type_info, action order).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.compiler import compile_program
from p4switch.p4info import build_p4info, p4info_text
from p4switch.p4info.compare import diff_p4info

HERE = Path(__file__).parent
REPO = HERE.parents[2]
LAB = [REPO / "p4src" / f"{name}.p4" for name in ("ecmp", "flowlet", "dlb")]
OWN = sorted(p for p in (HERE / "programs").glob("*.p4") if p.stem != "common_v1")

pytestmark = pytest.mark.bmv2


def p4c_p4info(source: Path, out: Path) -> str:
    compiler = shutil.which("p4c-bm2-ss")
    if compiler is None:
        pytest.skip("p4c-bm2-ss is not installed")
    p4info = out / f"{source.stem}.p4info.txtpb"
    argv = [compiler, "--arch", "v1model", "--p4runtime-files", str(p4info),
            "-o", str(out / f"{source.stem}.json"), str(source)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    return p4info.read_text()


@pytest.mark.parametrize("source", LAB + OWN, ids=lambda p: p.stem)
def test_p4info_equals_p4c_bm2_ss(source: Path, tmp_path: Path) -> None:
    text = p4c_p4info(source, tmp_path)
    expected = text_format.Parse(text, p4info_pb2.P4Info())
    ours = build_p4info(compile_program(source).model)
    assert diff_p4info(expected, ours) == []
    assert ours == expected
    assert p4info_text(ours) == text
