"""scripts/p4c_stf_sweep.py over a small p4c-like tree: outcomes, P4Info check, summary."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("p4switch.compiler", reason="the P4 compiler is not in the tree yet")

from p4switch.compiler import compile_program  # noqa: E402
from p4switch.p4info import build_p4info, p4info_text  # noqa: E402

PROGRAMS = Path(__file__).parent / "programs"
REPO = Path(__file__).resolve().parents[3]


def test_sweep_counts_outcomes_and_checks_p4info(tmp_path: Path) -> None:
    samples = tmp_path / "testdata" / "p4_16_samples"
    outputs = tmp_path / "testdata" / "p4_16_samples_outputs"
    samples.mkdir(parents=True)
    outputs.mkdir()
    fwd = PROGRAMS / "stf_fwd.p4"
    for name, stf in [("a-bmv2", "stf_fwd_pass.stf"), ("b-bmv2", "stf_fwd_wrong.stf"),
                      ("c-bmv2", "stf_fwd_invalid.stf")]:
        shutil.copy(fwd, samples / f"{name}.p4")
        shutil.copy(PROGRAMS / stf, samples / f"{name}.stf")
    shutil.copy(PROGRAMS / "stf_user_extern.p4", samples / "d-bmv2.p4")
    shutil.copy(PROGRAMS / "stf_fwd_pass.stf", samples / "d-bmv2.stf")
    (samples / "psa-bmv2.p4").write_text("#include <psa.p4>\n")  # not v1model: skipped
    (samples / "psa-bmv2.stf").write_text("")
    golden = p4info_text(build_p4info(compile_program(fwd).model))
    (outputs / "a-bmv2.p4.p4info.txtpb").write_text(golden)
    (outputs / "b-bmv2.p4.p4info.txtpb").write_text(golden.replace("size: 1024", "size: 7", 1))

    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "p4c_stf_sweep.py"), str(tmp_path), "--jobs", "2",
         "--json", str(out), "--markdown", str(tmp_path / "sweep.md")],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    results = {r["test"]: r for r in json.loads(out.read_text())}
    assert {t: r["outcome"] for t, r in results.items()} == {
        "a-bmv2": "PASS", "b-bmv2": "WRONG", "c-bmv2": "INVALID", "d-bmv2": "UNSUPPORTED",
    }
    assert results["a-bmv2"]["p4info"] == "same"
    assert results["b-bmv2"]["p4info"].startswith("differs: tables IngressI")
    assert results["c-bmv2"]["p4info"] == "no golden"
    lines = done.stdout.splitlines()
    assert lines[0].startswith("4 STF tests in ")
    assert lines[0].endswith(": PASS 1, UNSUPPORTED 1, WRONG 1, INVALID 1")
    assert "- b-bmv2: port 2 packet 0: differs at byte 12 (hex digit 25): expected 8, got 0" \
        in lines
    assert "- 1 x extern frobnicate" in lines
    assert (tmp_path / "sweep.md").read_text().count(lines[0]) == 1
