"""Dot-suffix names: what `ipv4_lpm` stands for among fully qualified names."""

from __future__ import annotations

import pytest

from p4switch.names import by_name, suffix_match, suffix_matches


def test_suffix_match_needs_a_whole_name_component() -> None:
    assert suffix_match("MyIngress.ipv4_lpm", "ipv4_lpm")
    assert suffix_match("ipv4_lpm", "ipv4_lpm")
    assert not suffix_match("MyIngress.my_ipv4_lpm", "ipv4_lpm")
    assert suffix_matches(["a.t", "b.t", "t2", "c.xt"], "t") == ["a.t", "b.t"]


def test_by_name_prefers_the_exact_name_then_a_unique_suffix() -> None:
    items = {"t": 0, "a.t": 1, "a.u": 2, "b.u": 3}
    assert by_name(items, "t", "table") == 0
    assert by_name(items, "a.u", "table") == 2
    with pytest.raises(KeyError, match=r"table name 'u' is ambiguous: a\.u, b\.u"):
        by_name(items, "u", "table")
    with pytest.raises(KeyError, match="no table named 'v'"):
        by_name(items, "v", "table")
    assert by_name({"x.y.z": 5}, "y.z", "table") == 5
