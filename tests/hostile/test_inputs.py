"""Every hostile input case answers with a short error, a non-zero status and no traceback."""

from __future__ import annotations

import os

import pytest

from tests.hostile.inputs import all_cases, run

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_input_gets_a_short_clear_error(case):
    if case.needs_root and os.geteuid() != 0:
        pytest.skip("needs root")
    answer = run(case)
    assert answer.clean, f"{case.argv}: {answer.problems}\n{answer.stderr[-2000:]}"
