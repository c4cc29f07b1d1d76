"""Balls into bins: what uniform hashing predicts for ECMP.

m flows hashed uniformly onto n equal-cost links: the expected load of the busiest link relative
to the mean (m/n), computed exactly (no simulation) from the distribution of the maximum.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from math import factorial


@cache
def _ways_all_bins_at_most(balls: int, bins: int, cap: int) -> int:
    """Assignments of `balls` labelled balls to `bins` bins with every bin holding at most `cap`."""
    # balls! * [x^balls] (sum_{j<=cap} x^j / j!)^bins, in exact rationals.
    poly = [Fraction(1)]
    term = [Fraction(1, factorial(j)) for j in range(min(cap, balls) + 1)]
    for _ in range(bins):
        product = [Fraction(0)] * min(len(poly) + len(term) - 1, balls + 1)
        for i, a in enumerate(poly):
            if a:
                for j, b in enumerate(term):
                    if i + j <= balls:
                        product[i + j] += a * b
        poly = product
    coefficient = poly[balls] if balls < len(poly) else Fraction(0)
    return int(coefficient * factorial(balls))


def expected_max_load(balls: int, bins: int) -> Fraction:
    """E[max bin load] for `balls` balls thrown uniformly into `bins` bins."""
    if balls < 0 or bins <= 0:
        raise ValueError("need balls >= 0 and bins > 0")
    total = bins**balls
    return sum((1 - Fraction(_ways_all_bins_at_most(balls, bins, k), total) for k in range(balls)),
               Fraction(0))


def expected_imbalance(flows: int, links: int) -> float:
    """E[max link load] / mean link load for `flows` equal flows on `links` ECMP links."""
    if flows == 0:
        return 1.0
    return float(expected_max_load(flows, links) / Fraction(flows, links))


def collision_probability(flows: int, links: int) -> float:
    """Probability that at least two flows share a link."""
    if flows > links:
        return 1.0
    distinct = Fraction(factorial(links), factorial(links - flows) * links**flows)
    return float(1 - distinct)
