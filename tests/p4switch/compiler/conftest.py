"""Helpers for the compiler tests: compile a test program, run packets through the engine.

Every test that takes the `switch` fixture runs three times: on the Python pipeline, on the
native one (p4switch/native.py) and on the C data plane (p4switch/cdp/pipeline.py, skipped for
a program the C back end does not run yet, and for the logs it does not write). The native and
C test builds use -O0 (quick to build; the C compiler's optimisation does not change what the
code computes); the lab's programs are tested at the shipped flags in
tests/p4switch/test_native.py and tests/p4switch/cdp/test_c_pipeline.py.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from p4switch.compiler import compile_program
from p4switch.engine import EngineConfig
from p4switch.native import CFLAGS_ENV
from p4switch.runtime import RuntimeState

PROGRAMS = Path(__file__).resolve().parent / "programs"


_compiled: dict[str, object] = {}


def compiled(name: str):
    """Each test program is compiled once per test session."""
    if name not in _compiled:
        _compiled[name] = compile_program(PROGRAMS / name)
    return _compiled[name]


class Switch:
    """A compiled program with a fresh runtime state and an engine."""

    def __init__(self, name: str, pipeline: str = "python", **config):
        self.program = compiled(name)
        self.state = RuntimeState(self.program.model)
        self.logs: list[str] = []
        if pipeline != "c":  # the C data plane does not trace (a tracing switch runs Python)
            config.setdefault("log", self.logs.append)
        if pipeline == "c":
            from p4switch.cdp.gen.program import CUnsupported
            from p4switch.cdp.pipeline import CPipeline

            try:
                self.engine = CPipeline(self.program, self.state, EngineConfig(**config))
            except CUnsupported as e:
                pytest.skip(f"the C data plane does not run {name}: {e}")
            return
        self.engine = self.program.new_engine(self.state, EngineConfig(**config),
                                              native=pipeline == "native")
        assert self.engine.pipeline == pipeline

    def send(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        return self.engine.process(port, data)

    def table(self, name: str):
        return self.state.tables[name]


@pytest.fixture(params=["python", "native", "c"])
def switch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if request.param in ("native", "c"):
        monkeypatch.setenv(CFLAGS_ENV, "-O0")
    return functools.partial(Switch, pipeline=request.param)
