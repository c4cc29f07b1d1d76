"""key=value coercion shared by fabric scales and experiment parameters."""

from __future__ import annotations

import pytest

from topos.builders import parse_scale
from topos.keyvalue import parse_value


def test_guessed_values_for_scales():
    assert parse_scale(["spines=3", "ratio=0.5", "dual-homed=yes", "planes=off", "name=x1",
                        "limit=none", "mask=0x10", "n=010"]) == {
        "spines": 3, "ratio": 0.5, "dual_homed": True, "planes": False, "name": "x1",
        "limit": None, "mask": "0x10", "n": 10}
    assert parse_value("1") == 1 and parse_value("1") is not True


def test_values_converted_to_the_type_of_the_default():
    assert parse_value("0x10", 5) == 16 and parse_value("1_000", 5) == 1000
    assert parse_value("2.5", 1.0) == 2.5 and parse_value("3", 1.0) == 3.0
    assert [parse_value(t, False) for t in ("yes", "1", "On", "no", "0", "FALSE")] == \
        [True, True, True, False, False, False]
    assert parse_value("1,2,,3", [7]) == [1, 2, 3]
    assert parse_value("a,b", ()) == ["a", "b"]
    assert parse_value("none", "text") == "none"
    assert parse_value("anything", None) == "anything"


@pytest.mark.parametrize(("text", "like", "message"), [
    ("maybe", True, "'maybe' is not a valid bool"),
    ("1.5", 3, "'1.5' is not a valid int"),
    ("fast", 0.5, "'fast' is not a valid float"),
    ("1,x", [1], "'x' is not a valid int"),
])
def test_invalid_text_for_the_type_names_it(text, like, message):
    with pytest.raises(ValueError, match=message):
        parse_value(text, like)
