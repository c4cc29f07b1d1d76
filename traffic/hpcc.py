"""HPCC sender (reaction point): window and rate from the INT records each ACK echoes.

Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019, Algorithm 1:

    NewAck(ack):
        if ack.seq > lastUpdateSeq:          # one update of the reference window per RTT
            W = ComputeWind(MeasureInflight(ack), updateWc=True); lastUpdateSeq = snd_nxt
        else:
            W = ComputeWind(MeasureInflight(ack), updateWc=False)
        R = W / T; L = ack.L
    MeasureInflight(ack):                    # per link i of the path, the most loaded wins
        txRate = (ack.L[i].txBytes - L[i].txBytes) / (ack.L[i].ts - L[i].ts)
        u' = min(ack.L[i].qlen, L[i].qlen) / (ack.L[i].B * T) + txRate / ack.L[i].B
        u, tau = max u' and that link's ts delta;  tau = min(tau, T)
        U = (1 - tau/T) U + (tau/T) u
    ComputeWind(U, updateWc):
        if U >= eta or incStage >= maxStage:  W = Wc / (U/eta) + W_AI; (incStage = 0; Wc = W)
        else:                                 W = Wc + W_AI;          (incStage += 1; Wc = W)

How the paper's quantities map here (`HpccParams`, `Hpcc.on_ack`):
- T (base RTT) = `base_rtt_s`; B_NIC = `line_rate_bps`; W_init = B_NIC x T (also the largest
  window: R = W/T never exceeds the line rate); eta = `eta` (0.95); maxStage = `max_stage` (5);
  W_AI = `w_ai_bytes` (the paper: W_init (1 - eta) / N for N expected concurrent flows);
- ack.L[i] = the i-th `HopRecord` (path order) the ACK echoes: qlen = `qdepth` x
  `packet_bytes` (the switches count packets, the paper bytes: one queued packet is taken as
  one data frame of `packet_bytes`); ts = `egress_ts` (µs, same switch only); txBytes =
  `tx_bytes` (modulo 2^32: the difference is taken modulo 2^32); B = `link_mbps` (0: the rate
  is unknown and the hop is skipped);
- a hop is compared only with the previous record of the same switch and egress port at the
  same position (a new path restarts the comparison); a ts delta of 0 gives no rate and the
  hop is skipped; an ACK with no usable hop leaves U and W as they are;
- seq = the ACK's (unwrapped) PSN, snd_nxt = one past the highest PSN sent, both in packets.
The first ACK only records L and lastUpdateSeq (there is nothing to compare with yet). U starts
at 1 (a full link): the window keeps W_init until the first feedback. W is kept at least one
data packet (`packet_bytes`), so a flow never stops. No timers: everything happens on ACKs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from traffic.inband import HopRecord

TX_BYTES_MOD = 1 << 32  # IntHop.tx_bytes wraps
EGRESS_TS_MOD = 1 << 48  # IntHop.egress_ts wraps (µs)


@dataclass(frozen=True)
class HpccParams:
    line_rate_bps: float  # B_NIC: the sender's link
    base_rtt_s: float  # T
    eta: float = 0.95  # target utilisation
    max_stage: int = 5  # additive-increase stages before a multiplicative adjustment
    w_ai_bytes: float = 80.0  # W_AI; `scaled` sizes it as the paper does, W_init (1 - eta) / N
    packet_bytes: int = 1000  # bytes one queued packet stands for (qdepth is in packets)

    @property
    def w_init_bytes(self) -> float:
        """W_init = B_NIC x T."""
        return self.line_rate_bps / 8 * self.base_rtt_s

    @classmethod
    def scaled(cls, line_rate_bps: float, base_rtt_s: float, *, packet_bytes: int = 1082,
               flows: int = 16, eta: float = 0.95, max_stage: int = 5) -> HpccParams:
        """Parameters for the emulated links (10-100 Mb/s, RTTs of ms): W_AI = W_init (1 -
        eta) / `flows` as the paper sizes it; `packet_bytes` = the data frame on the wire
        (1082 B for 1024 B of payload)."""
        w_init = line_rate_bps / 8 * base_rtt_s
        return cls(line_rate_bps=line_rate_bps, base_rtt_s=base_rtt_s, eta=eta,
                   max_stage=max_stage, w_ai_bytes=w_init * (1 - eta) / flows,
                   packet_bytes=packet_bytes)

    def problems(self) -> list[str]:
        out = []
        if self.line_rate_bps <= 0:
            out.append(f"HPCC line rate must be > 0 b/s, got {self.line_rate_bps}")
        if self.base_rtt_s <= 0:
            out.append(f"HPCC base RTT must be > 0 s, got {self.base_rtt_s}")
        if not 0 < self.eta <= 1:
            out.append(f"HPCC target utilisation eta must be in (0, 1], got {self.eta}")
        if self.max_stage < 0:
            out.append(f"HPCC maxStage must be >= 0, got {self.max_stage}")
        if self.w_ai_bytes < 0:
            out.append(f"HPCC W_AI must be >= 0 B, got {self.w_ai_bytes}")
        if self.packet_bytes <= 0:
            out.append(f"HPCC packet size must be > 0 B, got {self.packet_bytes}")
        return out

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class Hpcc:
    """Window state of one queue pair: `on_ack` with each ACK's records; `window_bytes`, then
    `rate_bps` (= W/T) say how much may be in flight and how fast to pace."""

    def __init__(self, params: HpccParams) -> None:
        problems = params.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.p = params
        self.window = self.wc = params.w_init_bytes  # W and the reference window Wc
        self.u = 1.0  # U, the normalised inflight bytes (EWMA)
        self.inc_stage = 0
        self.last_update_seq = -1  # -1: no ACK yet
        self.links: tuple[HopRecord, ...] = ()  # L: the previous ACK's records
        self.updates = 0  # ACKs that changed W (MeasureInflight found a usable hop)

    @property
    def rate_bps(self) -> float:
        """R = W / T."""
        return self.window * 8 / self.p.base_rtt_s

    def on_ack(self, seq: int, snd_nxt: int, hops: Sequence[HopRecord]) -> float:
        """NewAck: `seq` the ACKed PSN, `snd_nxt` one past the highest PSN sent, `hops` the
        echoed records in path order. Returns W (bytes)."""
        hops = tuple(hops)
        if self.last_update_seq < 0:  # the first ACK: only remember
            self.last_update_seq = snd_nxt
            self.links = hops
            return self.window
        u = self.measure_inflight(hops)
        self.links = hops
        if u is None:
            return self.window
        if seq > self.last_update_seq:
            self.window = self.compute_wind(u, update_wc=True)
            self.last_update_seq = snd_nxt
        else:
            self.window = self.compute_wind(u, update_wc=False)
        self.updates += 1
        return self.window

    def link_utilisation(self, hop: HopRecord, prev: HopRecord) -> tuple[float, float] | None:
        """(u', ts delta in s) of one link from two records of it; None if not comparable."""
        if hop.link_mbps == 0 or (hop.switch_id, hop.egress_port) != (prev.switch_id,
                                                                     prev.egress_port):
            return None
        dt = ((hop.egress_ts - prev.egress_ts) % EGRESS_TS_MOD) / 1e6
        if dt <= 0:
            return None
        b = hop.link_mbps * 1e6 / 8  # bytes/s
        tx_rate = ((hop.tx_bytes - prev.tx_bytes) % TX_BYTES_MOD) / dt
        qlen = min(hop.qdepth, prev.qdepth) * self.p.packet_bytes
        return qlen / (b * self.p.base_rtt_s) + tx_rate / b, dt

    def measure_inflight(self, hops: Sequence[HopRecord]) -> float | None:
        """MeasureInflight: the new U, or None (U unchanged) when no hop is comparable."""
        best: tuple[float, float] | None = None
        for hop, prev in zip(hops, self.links, strict=False):
            sample = self.link_utilisation(hop, prev)
            if sample is not None and (best is None or sample[0] > best[0]):
                best = sample
        if best is None:
            return None
        u, tau = best
        share = min(tau, self.p.base_rtt_s) / self.p.base_rtt_s
        self.u = (1 - share) * self.u + share * u
        return self.u

    def compute_wind(self, u: float, update_wc: bool) -> float:
        """ComputeWind, bounded to [one packet, W_init]."""
        p = self.p
        if u >= p.eta or self.inc_stage >= p.max_stage:
            w = self.wc / (max(u, 1e-9) / p.eta) + p.w_ai_bytes  # u = 0 only with maxStage
            if update_wc:
                self.inc_stage = 0
                self.wc = w
        else:
            w = self.wc + p.w_ai_bytes
            if update_wc:
                self.inc_stage += 1
                self.wc = w
        w = min(max(w, float(p.packet_bytes)), p.w_init_bytes)
        if update_wc:
            self.wc = w
        return w
