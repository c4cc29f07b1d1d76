"""Closed-book grading: every shortcut issue 31 lists fails its lab's checker, every solution
passes with hidden cases drawn from several seeds, and `lab start` hands out a pipeline without
the control under study. In the p4switch engine, no root."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabric_lab.closedbook import pipeline_copy
from fabric_lab.labkit import SOLUTIONS, lab, labs, run_checks

WITH_HIDDEN_CASES = {1, 2, 3, 4, 6, 7}  # lab 5's cases are the handout's own
HEADER = ('#include <core.p4>\n#include <v1model.p4>\n#include "include/headers.p4"\n'
          '#include "include/metadata.p4"\n')


def _solution(slug: str, name: str) -> str:
    return (SOLUTIONS / slug / name).read_text()


def _edited(slug: str, name: str, old: str, new: str) -> str:
    text = _solution(slug, name)
    assert old in text, f"the solution of {slug} changed: {old!r} not found"
    return text.replace(old, new)


def _flowlet_reference_renamed() -> str:
    """Lab 2 through the reference under another name, wrapped in a control of its own."""
    return (HEADER + '#include "include/flow.p4"\n#define FlowletSwitching Reference\n'
            '#include "include/flowlet.p4"\n#undef FlowletSwitching\n'
            'control FlowletSwitching(inout local_metadata_t meta,\n'
            '                         in standard_metadata_t standard_metadata) {\n'
            '    Reference() reference;\n'
            '    apply { reference.apply(meta, standard_metadata); }\n}\n'
            '#define LB_MODE_FLOWLET\n#include "include/fabric_main.p4"\n')


def _flowlet_included() -> str:
    text = _solution("02-flowlet", "flowlet_lab.p4")
    start, end = text.index("#define FABRIC_FLOWLET_P4"), text.index("#define LB_MODE_FLOWLET")
    return text[:start] + text[end:]


# (lab, file name, program text, the step that must fail, what its detail says)
SHORTCUTS = {
    "lab 1: include fabric_main.p4": (
        1, "ecmp_lab.p4", '#include <core.p4>\n#include <v1model.p4>\n#define LB_MODE_ECMP\n'
        '#include "include/fabric_main.p4"\n', 1, "uses the lab's reference (flow.p4)"),
    "lab 2: include the reference": (
        2, "flowlet_lab.p4", _flowlet_included(), 1, "uses the lab's reference (flowlet.p4)"),
    "lab 2: the reference renamed and wrapped": (
        2, "flowlet_lab.p4", _flowlet_reference_renamed(), 1, "uses the lab's reference"),
    "lab 2: a new flowlet at exactly the gap (<)": (
        2, "flowlet_lab.p4", _edited("02-flowlet", "flowlet_lab.p4", "gap_us < now - last",
                                     "gap_us <= now - last"), 4, "hidden case"),
    "lab 3: without TODO 4": (
        3, "dlb_lab.p4", _edited("03-dlb", "dlb_lab.p4",
                                 "if (hdr.bth.isValid() && !hdr.dlb_tag.isValid()) {\n"
                                 "            host_ports.apply();\n        }",
                                 "host_ports.apply();"), 4, "must pass untouched"),
    "lab 3: without flow_id": (
        3, "dlb_lab.p4", _edited("03-dlb", "dlb_lab.p4",
                                 "hdr.dlb_tag.flow_id = meta.flow_index[15:0];\n", ""), 3,
        "tag flow_id 0"),
    "lab 3: include the reference": (
        3, "dlb_lab.p4", HEADER + '#define LB_MODE_DLB\n#include "include/fabric_main.p4"\n', 1,
        "uses the lab's reference"),
    "lab 4: without the CE guard": (
        4, "ecn_lab.p4", _edited("04-ecn", "ecn_lab.p4", " && hdr.ipv4.ecn != ECN_CE", ""), 5,
        "not marked (nor counted) again"),
    "lab 4: <= instead of <": (
        4, "ecn_lab.p4", _edited("04-ecn", "ecn_lab.p4", "draw < mark_threshold",
                                 "draw <= mark_threshold"), 4, "mark exactly when draw < "),
    "lab 4: include the reference": (
        4, "ecn_lab.p4", HEADER + '#include "include/fabric_main.p4"\n', 1,
        "uses the lab's reference (ecn.p4)"),
    "lab 6: the controller's own computation": (
        6, "failover_lab.py", "from controller.fabric import FabricController\n\n\n"
        "def live_fabric(spec, down_ports):\n    return spec\n\n\n"
        "def routes_after(spec, down_ports):\n"
        "    controller = FabricController.__new__(FabricController)\n"
        "    controller.spec, controller.down_ports, controller.hash_seed = spec, down_ports, 0\n"
        "    return controller.routes()\n", 1, "imports controller.fabric"),
    "lab 7: topos.analysis.shortest_paths": (
        7, "fabrics_lab.py", "from topos.analysis import shortest_paths\n\n\n"
        "def path_count(spec, src, dst):\n    paths = shortest_paths(spec, src, dst)\n"
        "    return len(paths[0]), len(paths)\n", 1, "imports topos.analysis"),
    "lab 7: topos.analysis through importlib": (
        7, "fabrics_lab.py", "import importlib\n\n\ndef path_count(spec, src, dst):\n"
        "    paths = importlib.import_module('topos.analysis').shortest_paths(spec, src, dst)\n"
        "    return len(paths[0]), len(paths)\n", 1, "imports importlib"),
}


@pytest.mark.parametrize("name", SHORTCUTS)
def test_a_shortcut_fails_its_checker(name, tmp_path):
    number, file, text, step, said = SHORTCUTS[name]
    program = tmp_path / file
    program.write_text(text)
    results = run_checks(lab(number), program, experiments=False, seed=7)
    failed = results[step - 1]
    assert not failed.passed and not failed.skipped, (name, [(r.step.name, r.passed, r.detail)
                                                            for r in results])
    assert said in failed.detail, failed.detail
    assert not all(r.passed for r in results)


@pytest.mark.parametrize("seed", [1, 2024])
def test_every_solution_passes_the_hidden_cases_of_any_seed(seed):
    for item in labs():
        results = run_checks(item, item.solution, experiments=False, seed=seed)
        failures = {r.step.name: r.detail for r in results if not r.passed and not r.skipped}
        assert not failures, f"{item.slug} with seed {seed}: {failures}"
        hidden = [r.detail for r in results if "hidden" in r.detail]
        if item.number in WITH_HIDDEN_CASES:
            assert hidden, f"{item.slug} runs no hidden case"


def test_the_hidden_cases_change_with_the_seed():
    item = lab(2)
    details = {run_checks(item, item.solution, experiments=False, seed=seed)[3].detail
               for seed in (1, 2, 3)}
    assert len(details) > 1  # the drawn gap is part of the note


def test_the_student_pipeline_leaves_the_control_out(tmp_path):
    from p4switch.compiler import P4CompileError, compile_program

    for item in labs():
        if item.kind != "P4":
            continue
        folder = tmp_path / item.slug
        folder.mkdir()
        pipeline_copy(folder / "include", item.withheld, item.file, item.own_controls)
        for withheld in item.withheld:
            stub = (folder / "include" / withheld).read_text()
            assert "control" not in stub.replace("controls", "") and "#error" in stub
        # the solution builds against the copy and passes; the reference alone does not build
        mine = folder / item.file
        mine.write_text(item.solution.read_text())
        assert all(r.passed for r in run_checks(item, mine, experiments=False, seed=3)
                   if not r.step.after_all)
        bare = folder / "bare.p4"
        mode = re.search(r"#define (LB_MODE_\w+)", item.solution.read_text())
        bare.write_text(HEADER + (f"#define {mode[1]}\n" if mode else "")
                        + '#include "include/fabric_main.p4"\n')
        with pytest.raises(P4CompileError, match="must #define"):
            compile_program(bare, include_dirs=[])


def test_the_handout_copy_keeps_working_links(tmp_path):
    from fabric_lab.commands.lab import _absolute_links

    for item in labs():
        copied = _absolute_links(item.path / "README.md")
        for target in re.findall(r"\]\(([^)\s#]+)", copied):
            if not re.match(r"[a-z]+:", target):
                assert Path(target).is_absolute() and Path(target).exists(), (item.slug, target)
