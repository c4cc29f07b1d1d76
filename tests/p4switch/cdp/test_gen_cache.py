"""The C generator's output is kept in the compile cache by program and compiler: a switch
loading a program the cache has seen neither parses nor checks it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.cdp.gen import program as gen
from p4switch.compile_cache import CACHE_ENV
from p4switch.compiler import compile_program

ECMP = Path(__file__).resolve().parents[3] / "p4src" / "ecmp.p4"


def test_the_generated_c_is_kept_and_read_back_the_same(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    program = compile_program(ECMP)
    first = gen.generate_program(program)
    assert first == gen.generate(gen.program_info(program), program.name, controls=True)
    [kept] = (tmp_path / "cdp").glob("gen-ecmp-*.json")

    def no_parse(_program: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(gen, "program_info", no_parse)
    assert gen.generate_program(program) == first
    kept.write_text("{not json")  # a damaged entry is generated and kept again
    monkeypatch.undo()
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert gen.generate_program(program) == first
    assert kept.read_text().startswith('{"source"')
