"""The lab's P4 programs compiled once for driving pipelines directly (no processes, no Mininet);
`experiments.lb_switch.LbSwitch` programs one such switch."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from p4switch.compiler import CompiledProgram, compile_program

P4SRC = Path(__file__).resolve().parent.parent / "p4src"


@cache
def load_program(name: str = "ecmp") -> CompiledProgram:
    return compile_program(P4SRC / f"{name}.p4")


def by_suffix(names, suffix: str) -> str:
    matches = [name for name in names if name == suffix or name.endswith("." + suffix)]
    if len(matches) != 1:
        raise LookupError(f"expected one name ending in {suffix!r}, found {matches}")
    return matches[0]
