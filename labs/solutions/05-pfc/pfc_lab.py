"""Lab 5 — PFC: the thresholds that make a queue lossless. Solution."""

from __future__ import annotations

import math

REACTION_S = 0.003  # from the pause being decided until the upstream stops sending


def pfc_thresholds(depth: int, fabric_pps: float, host_pps: float) -> tuple[int, int]:
    """(XOFF, XON) in packets: XOFF x fabric_pps / host_pps + fabric_pps x REACTION_S <= depth,
    XON = XOFF // 2."""
    margin = fabric_pps * REACTION_S
    xoff = math.floor((depth - margin) * host_pps / fabric_pps)
    while xoff > 0 and xoff * fabric_pps / host_pps + margin > depth:  # float rounding
        xoff -= 1
    if xoff < 2:
        raise ValueError(f"a {depth}-packet queue filled at {fabric_pps:g} pps and drained at "
                         f"{host_pps:g} pps has no room for PFC's headroom")
    return xoff, xoff // 2
