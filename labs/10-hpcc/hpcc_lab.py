"""Lab 10 — HPCC: a sender's window from in-band telemetry.

Every data packet collects one INT record per switch (switch id, egress port, the queue it left
behind in packets, when it left in µs, the bytes that port has sent modulo 2^32, the link's rate
in Mb/s); the receiver echoes them in the ACK. HPCC (Li et al., SIGCOMM 2019, Algorithm 1)
turns two consecutive ACKs' records into the utilisation of the busiest link and sets the
window W so that link runs at eta. A record here has the attributes `switch_id`,
`egress_port`, `qdepth`, `egress_ts`, `tx_bytes` and `link_mbps` (`traffic.inband.HopRecord`).

Check:  fabric-lab lab check 10 --program hpcc_lab.py
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

TX_BYTES_MOD = 1 << 32  # tx_bytes wraps


def link_utilisation(hop: Any, prev: Any, base_rtt_s: float,
                     packet_bytes: int) -> tuple[float, float] | None:
    """(u', seconds between the two records) of one link, from its record in this ACK (`hop`)
    and in the previous one (`prev`):
        txRate = (hop.tx_bytes - prev.tx_bytes) / (hop.egress_ts - prev.egress_ts)
        u' = min(hop.qdepth, prev.qdepth) * packet_bytes / (B * T) + txRate / B
    with B the link's rate in bytes/s and T = `base_rtt_s`. None when the records cannot be
    compared: another switch or egress port, no rate (link_mbps 0), or no time passed."""
    # TODO 1: compare the records (same switch and port, a rate, time passed), then the
    # formula; tx_bytes may have wrapped between the two records.
    return None


def measure_inflight(u: float, hops: Sequence[Any], prev_hops: Sequence[Any], base_rtt_s: float,
                     packet_bytes: int) -> float | None:
    """MeasureInflight: the new U from the previous `u` and both ACKs' records (path order,
    compared position by position). The link with the largest u' counts, with its tau (capped
    at T): U = (1 - tau/T) u + (tau/T) u'. None when no link is comparable (U stays)."""
    # TODO 2: u' of every comparable link, keep the largest and its tau, cap tau at T,
    # average.
    return None


def compute_window(u: float, wc: float, inc_stage: int, update_wc: bool, eta: float,
                   max_stage: int, w_ai: float) -> tuple[float, float, int]:
    """ComputeWind: (W, Wc, incStage) afterwards. Multiplicative (W = Wc / (U/eta) + W_AI) when
    U >= eta or the additive stages are used up, else additive (W = Wc + W_AI); only with
    `update_wc` do Wc and incStage change (reset to 0 after a multiplicative step, one more
    after an additive one)."""
    # TODO 3: Algorithm 1's ComputeWind.
    return wc, wc, inc_stage
