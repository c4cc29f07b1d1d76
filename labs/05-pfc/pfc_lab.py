"""Lab 5 — PFC: the thresholds that make a queue lossless.

The lab's switches decide XOFF when a packet *leaves* the congested egress queue
(p4src/include/pfc.p4): that packet waited behind XOFF packets, i.e. XOFF / host_pps seconds,
and meanwhile up to XOFF x fabric_pps / host_pps packets kept arriving from upstream at the
fabric rate. On top of that the pause takes REACTION_S to act (the pause frame is queued, sent,
received and applied by the upstream switch, and on this 2-core machine either switch process
may wait for the CPU): fabric_pps x REACTION_S more packets. All of it must fit in the queue, or
the "lossless" queue drops.

Check:  fabric-lab lab check 5 --program pfc_lab.py     (sudo: the last step runs an incast)
"""

from __future__ import annotations

REACTION_S = 0.003  # from the pause being decided until the upstream stops sending


def pfc_thresholds(depth: int, fabric_pps: float, host_pps: float) -> tuple[int, int]:
    """(XOFF, XON) in packets for an egress queue of `depth` packets drained at `host_pps`
    and filled from upstream at up to `fabric_pps`.

    XOFF: the largest whole number of packets whose headroom still fits:
          XOFF x fabric_pps / host_pps + fabric_pps x REACTION_S <= depth.
    XON:  resume once the queue has drained to half of XOFF (XOFF // 2).
    Raise ValueError when XOFF would be below 2 (the queue is too small to be lossless)."""
    # TODO 1: compute XOFF from the headroom rule above (careful with rounding: it must fit).
    xoff = depth
    # TODO 2: refuse a queue too small for PFC.
    # TODO 3: XON.
    xon = xoff - 1
    return xoff, xon
