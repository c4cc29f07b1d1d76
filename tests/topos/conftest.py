"""Fixtures of the fabric model and Mininet tests; puts the repository root on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from topos import FABRICS, build_fabric  # noqa: E402
from topos.model import FabricSpec  # noqa: E402


@pytest.fixture(params=sorted(FABRICS))
def any_fabric(request: pytest.FixtureRequest) -> FabricSpec:
    """Each registered fabric at its default scale."""
    return build_fabric(request.param)
