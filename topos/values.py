"""What a value from the user may be: name syntax and number ranges, the one set of rules that
fabric files, `--scale`, job files and the commands' arguments are checked against.

Names (fabric, switch, host, NIC, interface) use letters, digits, '-', '_' and '.', and do not
start with '.' or '-': they become file names (the run-state file), namespace and interface
names, and words of the shell commands Mininet runs, so nothing else gets through. An interface
name is at most `IFNAMSIZ` characters (Linux's limit).

Numbers are finite (never NaN or infinity) and within the range of their quantity; the upper
bounds are what one run on one machine can finish, documented beside each.

A check returns the problem as a phrase ("must be a number, not 'abc'") or None; the caller
names the field.

This module imports nothing of the project, so any layer can import it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

IFNAMSIZ = 15  # Linux interface names are at most 15 characters
MAX_NAME = 64  # fabric, switch, host and NIC names
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
MAX_LISTED = 5  # an error lists this many faults, then "and N more"


def name_problem(value: Any, max_len: int = MAX_NAME) -> str | None:
    """Why `value` is not a safe name, or None."""
    if not isinstance(value, str):
        return f"must be a name, not {value!r}"
    if not value:
        return "must not be empty"
    if len(value) > max_len:
        return f"{value[:20]!r}... is {len(value)} characters (at most {max_len})"
    if not _NAME.fullmatch(value):
        return (f"{value!r} may hold only letters, digits, '-', '_' and '.', and may not start "
                f"with '.' or '-'")
    return None


@dataclass(frozen=True)
class Number:
    """A quantity's range: `lo` <= value <= `hi` (`lo` excluded when `above`), an integer when
    `integer`; `unit` for messages."""

    lo: float
    hi: float
    integer: bool = False
    above: bool = False
    unit: str = ""

    def problem(self, value: Any) -> str | None:
        """Why `value` is not a number of this range, or None."""
        kind = "an integer" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be {kind}, not {value!r}"
        if self.integer and not isinstance(value, int):
            return f"must be {kind}, not {value!r}"
        if not math.isfinite(value):
            return f"must be a finite number, not {value!r}"
        if value < self.lo or (self.above and value == self.lo) or value > self.hi:
            return f"must be {self.describe()}, not {value!r}"
        return None

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        low = f"> {_shown(self.lo)}" if self.above else f">= {_shown(self.lo)}"
        return f"{low} and <= {_shown(self.hi)}{unit}"

    def parse(self, text: str) -> int | float:
        """`text` as a number of this range; ValueError naming the problem."""
        try:
            value: int | float = int(text, 0) if self.integer else float(text)
        except ValueError:
            kind = "an integer" if self.integer else "a number"
            raise ValueError(f"must be {kind}, not {text!r}") from None
        problem = self.problem(value)
        if problem:
            raise ValueError(problem)
        return value


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


# Links. A rate above 100 Gb/s is beyond what a veth on one machine carries; a one-way delay
# above 10 s stalls every handshake of the lab's tools; a queue is a kernel qdisc limit.
RATE_MBPS = Number(0, 100_000, above=True, unit="Mb/s")
DELAY_MS = Number(0, 10_000, unit="ms")
QUEUE_PKTS = Number(1, 1_000_000, integer=True, unit="packets")
MTU = Number(1280, 65535, integer=True, unit="bytes")  # IPv6's minimum link MTU; a veth's largest
TCP_PORT = Number(1, 65535, integer=True)
LISTEN_PORT = Number(0, 65535, integer=True)  # 0: the kernel picks one
# P4Runtime's election id: the lab sets its low 64 bits (0 is an id like any other, as in PI)
ELECTION_ID = Number(0, 2**64 - 1, integer=True)
# Rates and ratios of the modelled fabric the emulation stands for.
MODEL_GBPS = Number(0, 1e6, above=True, unit="Gb/s")
NVLINK_RATIO = Number(0, 1e4, above=True)
TIME_SCALE = Number(0, 1e4, above=True)
SECONDS = Number(0, 1e6, above=True, unit="s")
ITERATIONS = Number(1, 100_000, integer=True)


def listed(problems: list[str], indent: str = "  - ") -> str:
    """`problems` a line each, at most MAX_LISTED of them, then "and N more"."""
    shown = [f"{indent}{p}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        shown.append(f"{indent}and {len(problems) - MAX_LISTED} more")
    return "\n".join(shown)


def fault_message(source: str, problems: list[str]) -> str:
    """One line for one fault, a header and a line per fault (at most MAX_LISTED) for several."""
    if len(problems) == 1:
        return f"{source}: {problems[0]}"
    return f"{source}: {len(problems)} problems:\n{listed(problems)}"


__all__ = [
    "DELAY_MS",
    "ELECTION_ID",
    "IFNAMSIZ",
    "ITERATIONS",
    "LISTEN_PORT",
    "MAX_LISTED",
    "MAX_NAME",
    "MODEL_GBPS",
    "MTU",
    "NVLINK_RATIO",
    "QUEUE_PKTS",
    "RATE_MBPS",
    "SECONDS",
    "TCP_PORT",
    "TIME_SCALE",
    "Number",
    "fault_message",
    "listed",
    "name_problem",
]
