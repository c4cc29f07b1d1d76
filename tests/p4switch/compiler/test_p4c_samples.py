"""p4c's own v1model samples with STF tests, run through the STF runner: the coverage yardstick.

Needs a p4c checkout: P4C_TESTDATA=<p4c>/testdata .venv/bin/pytest -m slow <this file>.
Every sample must pass or be reported unsupported/invalid; none may run wrongly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from p4switch.stf.runner import Outcome, run_stf_files

TESTDATA = os.environ.get("P4C_TESTDATA")
SAMPLES = Path(TESTDATA) / "p4_16_samples" if TESTDATA else None
# PSA programs need psa.p4, which is not the v1model architecture
STFS = sorted(p for p in SAMPLES.glob("*-bmv2.stf") if not p.name.startswith("psa-")) \
    if SAMPLES and SAMPLES.is_dir() else []

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not STFS, reason="set P4C_TESTDATA to p4c's testdata")]


@pytest.mark.parametrize("stf", STFS, ids=[p.stem for p in STFS])
def test_sample_is_never_wrong(stf: Path):
    program = stf.with_suffix(".p4")
    result = run_stf_files(program, stf, include_dirs=[SAMPLES])
    assert result.outcome is not Outcome.WRONG, result.messages


def test_most_samples_pass():
    passed = sum(run_stf_files(stf.with_suffix(".p4"), stf, include_dirs=[SAMPLES]).outcome
                 is Outcome.PASS for stf in STFS)
    assert passed >= 0.9 * len(STFS), f"{passed} of {len(STFS)} passed"
