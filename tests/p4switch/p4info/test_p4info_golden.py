"""P4Info built from hand-made models of p4c samples equals p4c's golden output, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4info_models import MODELS

from p4switch.p4info import build_p4info, p4info_text

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("program", sorted(MODELS))
def test_text_equals_p4c_golden(program: str) -> None:
    expected = (GOLDEN / f"{program}.p4info.txtpb").read_text()
    assert p4info_text(build_p4info(MODELS[program]())) == expected


@pytest.mark.parametrize("program", sorted(MODELS))
def test_golden_text_round_trips(program: str) -> None:
    # Our text parses back into the same message p4c's text describes.
    expected = text_format.Parse(
        (GOLDEN / f"{program}.p4info.txtpb").read_text(), p4info_pb2.P4Info()
    )
    assert build_p4info(MODELS[program]()) == expected
