"""The balls-into-bins expectation against the published figures and a brute-force count."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from experiments.framework.ballsbins import collision_probability, expected_imbalance, expected_max_load


@pytest.mark.parametrize(("flows", "links", "imbalance", "collision"), [
    (2, 2, 1.50, 0.50), (4, 4, 2.12, 0.91), (8, 8, 2.60, 0.998), (8, 4, 1.77, 1.0),
])
def test_published_figures(flows: int, links: int, imbalance: float, collision: float) -> None:
    assert expected_imbalance(flows, links) == pytest.approx(imbalance, abs=0.01)
    assert collision_probability(flows, links) == pytest.approx(collision, abs=0.005)


@pytest.mark.parametrize(("balls", "bins"), [(1, 3), (3, 2), (4, 3), (5, 2), (3, 5)])
def test_exact_against_enumeration(balls: int, bins: int) -> None:
    outcomes = list(itertools.product(range(bins), repeat=balls))
    brute = Fraction(sum(max(o.count(b) for b in range(bins)) for o in outcomes), len(outcomes))
    assert expected_max_load(balls, bins) == brute
