"""Finding the programs a target runs: on PATH, or next to the running Python (the project's
venv `bin/`, where `p4switch` and `p4switch-cli` live when the venv is not on PATH)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def find_program(program: str) -> str | None:
    """The path of `program` (a name, or a path that must exist), or None."""
    if "/" in program:
        return program if Path(program).exists() else None
    found = shutil.which(program)
    if found:
        return found
    beside = Path(sys.executable).parent / program
    return str(beside) if beside.exists() else None
