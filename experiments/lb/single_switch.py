"""The lab's P4 programs compiled once for driving pipelines directly (no processes, no Mininet);
`experiments.lb.switch.LbSwitch` programs one such switch."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

from p4switch.compiler import CompiledProgram, compile_program
from p4switch.names import suffix_matches

P4SRC = Path(__file__).resolve().parents[2] / "p4src"


@cache
def load_program(name: str = "ecmp") -> CompiledProgram:
    return compile_program(P4SRC / f"{name}.p4")


def by_suffix(names: Iterable[str], suffix: str) -> str:
    matches = suffix_matches(names, suffix)
    if len(matches) != 1:
        raise LookupError(f"expected one name ending in {suffix!r}, found {matches}")
    return matches[0]
