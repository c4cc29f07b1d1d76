"""Closed-book grading: the checkers grade what the student wrote, not the lab's own reference.

- A P4 lab names the controls the student's file must declare (`OWN_CONTROLS` in its check.py)
  and the pipeline files `lab start` leaves out of the student's copy (`WITHHELD`, under
  p4src/include/). `own_controls()` parses the student's program with p4switch's front end and
  fails when a control is declared anywhere but in the student's file, or when any line of a
  withheld file takes part in the program (an include of the reference, renamed or not).
- A Python lab names the modules its answer may not import (`FORBIDDEN_IMPORTS`): the helpers
  that already compute it. `own_imports()` reads the student's module's import statements.
- `pipeline_copy()` writes the student's `include/`: p4src/include with each withheld file
  replaced by a stub that stops the compile with a clear `#error` when the student's program
  does not provide the control.
- Hidden cases draw their flows, values and orders from `hidden_rng()`, seeded per run
  (`FABRIC_LAB_SEED=N` repeats a run's cases).
"""

from __future__ import annotations

import ast
import os
import random
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from fabric_lab.labkit import P4SRC, StepFailed

INCLUDE = P4SRC / "include"
SEED_VARIABLE = "FABRIC_LAB_SEED"


def run_seed() -> int:
    """The seed of this run's hidden cases: $FABRIC_LAB_SEED, or a fresh one."""
    given = os.environ.get(SEED_VARIABLE, "").strip()
    return int(given, 0) if given else random.SystemRandom().randrange(1 << 31)


def hidden_rng(seed: int, case: str) -> random.Random:
    """One hidden case's random source: the run's seed and the case's name."""
    return random.Random(f"{seed}:{case}")


def _guard(path: Path) -> str:
    found = re.search(r"^\s*#\s*ifndef\s+(\w+)", path.read_text(), re.M)
    if not found:
        raise ValueError(f"{path} has no include guard")
    return found[1]


def pipeline_copy(target: Path, withheld: Iterable[str], lab_file: str,
                  controls: Iterable[str]) -> list[str]:
    """Copy p4src/include to `target` (read-only files) with every withheld file replaced by a
    stub; returns the stubbed file names."""
    withheld = list(withheld)
    target.mkdir(parents=True)
    names = ", ".join(controls)
    for source in sorted(INCLUDE.glob("*.p4")):
        out = target / source.name
        if source.name in withheld:
            guard = _guard(source)
            out.write_text(
                f"/* Withheld for the lab: {lab_file} provides what this file would ({names}). "
                f"*/\n#ifndef {guard}\n#error \"{lab_file} must #define {guard} and declare "
                f"{names} itself\"\n#endif\n")
        else:
            shutil.copyfile(source, out)
        out.chmod(0o444)
    return withheld


def _same_file(a: str | Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == b.resolve()
    except OSError:
        return False


def own_controls(program: Path, controls: Iterable[str], withheld: Iterable[str]) -> str:
    """StepFailed unless `program` itself declares every control of `controls` and no line of
    a withheld pipeline file is part of it."""
    from p4switch.frontend import ast_decl
    from p4switch.frontend.diagnostics import Reporter
    from p4switch.frontend.parse import parse
    from p4switch.frontend.preprocess import preprocess

    reporter = Reporter()
    pre = preprocess(program.read_text(), str(program), [P4SRC], None, reporter)
    tree = parse(pre, reporter)
    if tree is None:
        raise StepFailed("; ".join(str(d) for d in reporter.diagnostics[:3]))
    withheld = set(withheld)
    used = sorted({Path(file).name for (file, _), text in zip(pre.line_map,
                                                               pre.text.split("\n"), strict=False)
                   if text.strip() and Path(file).name in withheld
                   and not _same_file(file, program)})
    if used:
        raise StepFailed(f"{program.name} uses the lab's reference ({', '.join(used)}): write "
                         f"the control in your own file instead of including it")
    declared = {d.name: d.pos.file for d in tree.decls if isinstance(d, ast_decl.ControlDecl)}
    for name in controls:
        if name not in declared:
            raise StepFailed(f"{program.name} declares no control {name}: the lab's pipeline "
                             f"leaves it to you")
        if not _same_file(declared[name], program):
            raise StepFailed(f"control {name} comes from {declared[name]}, not from "
                             f"{program.name}: the checker grades the control you write")
    return f"{', '.join(controls)} declared in {program.name}"


def own_imports(program: Path, forbidden: Mapping[str, str]) -> None:
    """StepFailed when the student's module imports a module of `forbidden` (name: why), in
    any form (`import a.b`, `from a import b`, `__import__`, importlib)."""
    tree = ast.parse(program.read_text(), str(program))
    imported: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.append((node.module, node.lineno))
            imported += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in ("__import__", "import_module"):
                imported.append(("importlib", node.lineno))
    for module, line in imported:
        for banned, why in forbidden.items():
            if module == banned or module.startswith(banned + "."):
                raise StepFailed(f"{program.name}:{line} imports {module}: {why}")
