"""The course's labs: every skeleton builds and fails its checker, every solution passes it, and
`fabric-lab lab list|start|check` work as a student uses them. The checks run the programs in the
p4switch engine for real; lab 5's incast step (Mininet) is in test_lab_experiments.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lab.labkit import LABS, P4SRC, SOLUTIONS, lab, labs, run_checks

ROOT = Path(__file__).resolve().parents[2]
ORDER = ["01-ecmp", "02-flowlet", "03-dlb", "04-ecn", "05-pfc", "06-failover", "07-fabrics",
         "08-pfc-deadlock", "09-collectives", "10-hpcc"]


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fabric_lab.cli", "lab", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_labs_come_in_course_order_with_handouts_and_solutions():
    found = labs()
    assert [item.slug for item in found] == ORDER
    assert [item.number for item in found] == [int(slug[:2]) for slug in ORDER]
    for item in found:
        handout = (item.path / "README.md").read_text()
        for section in ("**Prerequisites:**", "**Time:**", "## Steps", "## Expected results",
                        "## What to observe", "## Troubleshooting", f"fabric-lab lab check "
                        f"{item.number}"):
            assert section in handout, f"{item.slug}/README.md lacks {section!r}"
        assert item.skeleton.is_file() and item.solution.is_file()
        assert item.skeleton.read_text() != item.solution.read_text()
        assert "TODO" in item.skeleton.read_text() and "TODO" not in item.solution.read_text()
        assert len(item.steps) >= 4


@pytest.mark.parametrize("slug", ORDER)
def test_skeleton_builds_but_fails_and_solution_passes(slug):
    item = next(i for i in labs() if i.slug == slug)
    skeleton = run_checks(item, item.skeleton)
    assert skeleton[0].passed, f"the skeleton must build: {skeleton[0].detail}"
    failed = [r for r in skeleton if not r.passed and not r.skipped]
    assert failed, f"{slug}: the skeleton passes every step"
    assert all(r.step.hint for r in failed)
    stated = re.search(r"the skeleton: (\d+)/(\d+)", (item.path / "README.md").read_text())
    assert stated, f"{slug}/README.md does not say what the skeleton scores"
    assert (int(stated[1]), int(stated[2])) == (sum(r.passed for r in skeleton), len(skeleton))
    # experiments (Mininet) are left out here: test_lab_experiments.py runs them under root
    solution = [r for r in run_checks(item, item.solution, experiments=False)
                if not r.step.after_all]
    failures = {r.step.name: r.detail for r in solution if not r.passed}
    assert not failures, f"{slug}: the solution fails {failures}"


def test_p4_skeletons_compile_with_the_shared_pipeline_on_p4switch():
    from p4switch.compiler import compile_program

    for item in labs():
        if item.kind == "P4":
            compiled = compile_program(item.skeleton, include_dirs=[P4SRC])
            tables = {t.name for t in compiled.model.tables}
            assert "FabricIngress.routing.ipv4_lpm" in tables  # the controller programs it


def test_a_program_that_does_not_compile_fails_the_first_step_and_skips_the_rest(tmp_path):
    broken = tmp_path / "ecmp_lab.p4"
    broken.write_text((LABS / "01-ecmp" / "ecmp_lab.p4").read_text()
                      .replace("meta.flow_hash = 0;", "meta.flow_hash = ;"))
    results = run_checks(lab(1), broken)
    assert not results[0].passed and "ecmp_lab.p4:" in results[0].detail
    assert all(r.skipped for r in results[1:])


def test_a_python_lab_reports_an_exception_as_a_failed_step(tmp_path):
    raising = tmp_path / "fabrics_lab.py"
    raising.write_text("def path_count(spec, src, dst):\n    raise KeyError('oops')\n")
    results = run_checks(lab(7), raising)
    assert results[0].passed
    assert not results[1].passed and "raised KeyError: 'oops'" in results[1].detail


def test_lab_list_start_and_check_as_a_student(tmp_path):
    listed = _cli("list")
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if re.match(r"\s*\d+\s", line)]
    assert [int(line.split()[0]) for line in rows] == [int(slug[:2]) for slug in ORDER]
    assert "ecmp_lab.p4 (P4)" in rows[0] and "pfc_lab.py (Python)" in rows[4]

    work = tmp_path / "lab1"
    started = _cli("start", "1", str(work))
    assert started.returncode == 0, started.stderr
    assert (work / "ecmp_lab.p4").read_text() == (LABS / "01-ecmp" / "ecmp_lab.p4").read_text()
    assert (work / "lab1-README.md").is_file()
    # the pipeline is a copy without the control under study (include/flow.p4 is a stub)
    assert not (work / "include").is_symlink()
    assert (work / "include" / "routing.p4").read_text() == (P4SRC / "include" /
                                                           "routing.p4").read_text()
    assert "control FlowKey" not in (work / "include" / "flow.p4").read_text()
    handout = (work / "lab1-README.md").read_text()
    assert "](../../docs" not in handout and f"]({ROOT}/docs/" in handout
    again = _cli("start", "1", str(work))
    assert again.returncode == 2 and "never overwritten" in again.stderr

    # the untouched copy fails, with a hint; the student writes the solution in; it passes
    failing = _cli("check", "1", cwd=work)
    assert failing.returncode == 1
    assert "[FAIL] 4. spreads 64 flows over all 4 paths" in failing.stdout
    assert "hint: TODO 2" in failing.stdout
    assert "3/7 steps passed" in failing.stdout
    (work / "ecmp_lab.p4").write_text((SOLUTIONS / "01-ecmp" / "ecmp_lab.p4").read_text())
    passing = _cli("check", "1", cwd=work)
    assert passing.returncode == 0, passing.stdout
    assert "7/7 steps passed — lab complete" in passing.stdout
    csv = (work / "ecmp-collisions.csv").read_text().splitlines()
    assert csv[0] == "trial,flows,links,max_load,links_used" and len(csv) == 151


def test_the_file_checked_by_default_comes_from_the_current_directory(tmp_path):
    missing = _cli("check", "2", cwd=tmp_path)
    assert missing.returncode == 2 and "fabric-lab lab start 2 DIR" in missing.stderr
    unknown = _cli("check", "99")
    assert unknown.returncode == 2 and "no lab 99" in unknown.stderr
    other = tmp_path / "mine.p4"
    other.write_text((SOLUTIONS / "02-flowlet" / "flowlet_lab.p4").read_text())
    (tmp_path / "include").symlink_to(P4SRC / "include")
    done = _cli("check", "2", "--program", str(other), cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert "4/4 steps passed" in done.stdout


@pytest.mark.bmv2
def test_p4_skeletons_and_solutions_compile_for_bmv2_too():
    from controller.pipeline import build_pipeline

    for item in labs():
        if item.kind == "P4":
            for program in (item.skeleton, item.solution):
                pipeline = build_pipeline(program, "bmv2", include_dirs=[P4SRC])
                names = {t.preamble.name for t in pipeline.p4info.tables}
                assert "FabricIngress.routing.ipv4_lpm" in names, program
