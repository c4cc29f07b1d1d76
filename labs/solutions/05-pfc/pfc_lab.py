"""Lab 5 — PFC: the thresholds that make a queue lossless. Solution."""

from __future__ import annotations

import math

MARGIN = 4  # packets that arrive after the pause is sent, whatever XOFF is


def pfc_thresholds(depth: int, fabric_pps: float, host_pps: float) -> tuple[int, int]:
    """(XOFF, XON) in packets: XOFF x fabric_pps / host_pps + MARGIN <= depth, XON = XOFF // 2."""
    xoff = math.floor((depth - MARGIN) * host_pps / fabric_pps)
    while xoff > 0 and xoff * fabric_pps / host_pps + MARGIN > depth:  # float rounding
        xoff -= 1
    if xoff < 2:
        raise ValueError(f"a {depth}-packet queue filled at {fabric_pps:g} pps and drained at "
                         f"{host_pps:g} pps has no room for PFC's headroom")
    return xoff, xoff // 2
