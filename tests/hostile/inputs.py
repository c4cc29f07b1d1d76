"""Hostile and careless inputs to the lab's commands, and what a good answer to each looks like.

A `Case` is one command line run in a fresh directory holding the files (and symbolic links)
it names. A good answer (`Answer.clean`) is a non-zero exit status below 128 (no signal; the
case's `status` when it names one), no Python traceback, an error of a few lines on stderr that
contains `must_say` (the path or the field at fault), within the case's time limit. The cases
live in `tests/hostile/cases/`, one module per area, each with a `CASES` list;
`tests/hostile/test_inputs.py` runs them as the regression suite and `bench/hostile_inputs.py`
reports how many answer cleanly.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_ERROR_LINES = 8  # an error lists every fault it found, a line each; more is a dump


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]                      # "{dir}" stands for the case's directory
    files: dict[str, bytes | str] = field(default_factory=dict)  # written into it first
    must_say: str = ""                   # a substring the error must contain
    timeout_s: float = 60.0
    needs_root: bool = False
    links: dict[str, str] = field(default_factory=dict)  # made after `files`: name -> target
    status: int | None = None            # the exit status its class of error has, if promised


@dataclass(frozen=True)
class Answer:
    case: Case
    status: int | None                   # None: still running at the time limit (killed)
    stderr: str
    stdout: str
    seconds: float

    @property
    def error_lines(self) -> list[str]:
        """stderr's lines, argparse's usage block left out (it comes before its one error line)."""
        lines, in_usage = [], False
        for line in self.stderr.splitlines():
            if line.startswith("usage:"):
                in_usage = True
            elif in_usage and line.startswith(" "):
                continue
            else:
                in_usage = False
                if line.strip():
                    lines.append(line)
        return lines

    @property
    def problems(self) -> list[str]:
        out: list[str] = []
        if self.status is None:
            out.append(f"still running after {self.case.timeout_s:.0f} s")
        elif self.status == 0:
            out.append("exit status 0")
        elif self.status < 0 or self.status >= 128:
            out.append(f"killed or crashed (status {self.status})")
        elif self.case.status is not None and self.status != self.case.status:
            out.append(f"exit status {self.status}, not {self.case.status}")
        if "Traceback (most recent call last)" in self.stderr + self.stdout:
            out.append("a traceback")
        if not self.error_lines:
            out.append("nothing on stderr")
        elif len(self.error_lines) > MAX_ERROR_LINES:
            out.append(f"{len(self.error_lines)} lines on stderr")
        if self.case.must_say and self.case.must_say not in self.stderr:
            out.append(f"the error does not say {self.case.must_say!r}")
        return out

    @property
    def clean(self) -> bool:
        return not self.problems

    @property
    def one_line(self) -> bool:
        return self.clean and len(self.error_lines) == 1


def all_cases() -> list[Case]:
    from tests.hostile import cases
    found: list[Case] = []
    for module in pkgutil.iter_modules(cases.__path__):
        found += importlib.import_module(f"{cases.__name__}.{module.name}").CASES
    names = [case.name for case in found]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"hostile input cases named twice: {', '.join(duplicated)}")
    return found


def command(name: str) -> str:
    """A project command from this checkout's environment, else from PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else name


def run(case: Case) -> Answer:
    with tempfile.TemporaryDirectory(prefix="fabric-lab-hostile-") as tmp:
        for rel, content in case.files.items():
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        for rel, target in case.links.items():
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(target.replace("{dir}", tmp))
        argv = [arg.replace("{dir}", tmp) for arg in case.argv]
        argv[0] = command(argv[0])
        env = dict(os.environ, PYTHONPATH=str(REPO))
        start = time.monotonic()
        try:
            done = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True,
                                  errors="replace", timeout=case.timeout_s,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as late:
            return Answer(case, None, _text(late.stderr), _text(late.stdout),
                          time.monotonic() - start)
        return Answer(case, done.returncode, done.stderr, done.stdout, time.monotonic() - start)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")
