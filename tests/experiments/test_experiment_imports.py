"""Experiments import the framework, never each other: what two experiments share lives in
`experiments/framework/`."""

from __future__ import annotations

import ast
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
LIBRARY = "framework"


def imported_modules(path: Path, top: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in one file under `top` (the directory
    holding the `experiments` package), relative imports resolved."""
    package = ".".join(path.relative_to(top).parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return out


def sibling_imports(root: Path = EXPERIMENTS) -> list[str]:
    """`file:line: module` for every import of another experiment's package."""
    packages = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        own = parts[0] if len(parts) > 1 else None
        if own in (None, LIBRARY):
            continue  # experiments/__init__.py, and the library itself
        for line, module in imported_modules(path, root.parent):
            names = module.split(".")
            if len(names) >= 2 and names[0] == "experiments" and names[1] in packages \
                    and names[1] not in (own, LIBRARY):
                found.append(f"{path.relative_to(root.parent)}:{line}: {module}")
    return sorted(set(found))


def test_no_experiment_imports_another():
    assert sibling_imports() == []


def test_the_check_finds_a_sibling_import(tmp_path):
    root = tmp_path / "experiments"
    for package in ("framework", "alpha", "beta"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "alpha" / "experiment.py").write_text(
        "from experiments.framework import Experiment\n"
        "from experiments.alpha import plots\n"
        "from . import trial\n")
    (root / "beta" / "experiment.py").write_text(
        "import experiments.alpha.experiment\n"
        "from ..alpha import trial\n"
        "def later():\n"
        "    from experiments import alpha\n")
    assert sibling_imports(root) == ["experiments/beta/experiment.py:1: experiments.alpha.experiment",
                     "experiments/beta/experiment.py:2: experiments.alpha",
                     "experiments/beta/experiment.py:2: experiments.alpha.trial",
                     "experiments/beta/experiment.py:4: experiments.alpha"]
