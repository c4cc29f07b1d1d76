import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runtime_models import model  # noqa: E402

from p4switch.runtime import RuntimeState  # noqa: E402


@pytest.fixture
def state() -> RuntimeState:
    return RuntimeState(model())
