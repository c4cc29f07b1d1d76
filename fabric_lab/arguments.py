"""Numeric command-line options checked by argparse against the lab's ranges (`topos.values`):
`--web-port 99999` or `--model-gbps nan` is a usage error (exit 2) naming the option, before
anything starts.

    parser.add_argument("--web-port", type=number(LISTEN_PORT), default=8700)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from topos.size import MAX_SWITCHES
from topos.values import Number

# ranges of options only the commands have
HASH_SEED = Number(0, 0xFFFF, integer=True)  # the 16-bit selector seed of p4src/include/routing.p4
QUEUE_RATE_PPS = Number(0, 1e9, integer=True, unit="packets/s")  # 0: no limit
FLOWLET_GAP_US = Number(1, 10_000_000, integer=True, unit="us")
SWITCH_PROCESSES = Number(1, MAX_SWITCHES, integer=True)


def number(quantity: Number) -> Callable[[str], int | float]:
    """An argparse `type=` for a number within `quantity`'s range."""

    def parse(text: str) -> int | float:
        try:
            return quantity.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = "integer" if quantity.integer else "number"  # argparse's "invalid ... value"
    return parse


def new_dir_problem(path: Path, option: str) -> str | None:
    """Why `path` cannot be a new result directory (it names a file, or a directory that is
    not empty), or None: what the run itself would refuse when it claims the directory."""
    from experiments.framework.results import result_dir_problem

    problem = result_dir_problem(path)
    return f"{option} {problem}" if problem else None


def dir_problem(path: Path, option: str) -> str | None:
    """Why `path` cannot hold directories (it names a file, or a parent is a file), or None."""
    for at in (path, *path.parents):
        if at.exists():
            return None if at.is_dir() else f"{option} {path}: {at} is a file, not a directory"
    return None


__all__ = ["FLOWLET_GAP_US", "HASH_SEED", "QUEUE_RATE_PPS", "SWITCH_PROCESSES", "dir_problem",
           "new_dir_problem", "number"]
