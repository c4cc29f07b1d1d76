"""Fixtures of the switch tests: the repository importable, a test network per test."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sw_netenv import TestNet  # noqa: E402


@pytest.fixture
def net():
    with TestNet() as n:
        yield n
