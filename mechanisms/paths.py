"""Where the lab's P4 sources are: the one place that finds `p4src/`."""

from __future__ import annotations

from pathlib import Path

from mechanisms.model import MechanismError

P4SRC = Path(__file__).resolve().parent.parent / "p4src"
P4_INCLUDE = P4SRC / "include"


def include_path(file: str) -> Path:
    """`p4src/include/<file>`."""
    return P4_INCLUDE / file


def program_path(name: str) -> Path:
    """`p4src/<name>.p4` ("ecmp" or "ecmp.p4"); a MechanismError names the programs there are."""
    stem = name[:-3] if name.endswith(".p4") else name
    path = P4SRC / f"{stem}.p4"
    if "/" in stem or not path.is_file():
        known = ", ".join(sorted(p.stem for p in P4SRC.glob("*.p4"))) or "none"
        raise MechanismError(f"no P4 program {name!r} in {P4SRC} (there are: {known})")
    return path
