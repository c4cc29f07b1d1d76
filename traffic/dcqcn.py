"""DCQCN reaction point (sender side): rate cut on CNP, alpha estimate, staged recovery.

Follows Zhu et al., SIGCOMM 2015: on a CNP (at most once per rate-decrease interval)
  target = current; current *= 1 - alpha/2; alpha = (1-g) alpha + g
alpha decays by (1-g) every alpha-update period without CNPs; every rate-increase period since
the last cut is one recovery stage: the first `fast_recovery_stages` move current halfway to
target (fast recovery), later stages also raise target by the additive increase, and after
another `fast_recovery_stages` stages by the hyper increase (byte counting is not modelled:
stages come from the timer only).
Time is passed in (seconds, any monotonic origin), so the logic runs the same in tests.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class DcqcnParams:
    line_rate_bps: float
    g: float = 1 / 256
    alpha_update_s: float = 55e-6
    rate_increase_s: float = 300e-6
    rate_decrease_interval_s: float = 50e-6
    additive_bps: float = 5e6 * 4  # 5 Mb/s per 25 Gb/s at 100G
    hyper_bps: float = 50e6 * 4
    min_rate_bps: float = 1e9
    fast_recovery_stages: int = 5

    @classmethod
    def scaled(cls, line_rate_bps: float) -> DcqcnParams:
        """Parameters for 10-100 Mb/s emulated links (the usual scaling: timers in base
        RTTs x ~500-1000, increases as fractions of line rate)."""
        if line_rate_bps <= 0:
            raise ValueError(f"line rate must be > 0 b/s, got {line_rate_bps}")
        return cls(
            line_rate_bps=line_rate_bps,
            g=1 / 256,
            alpha_update_s=0.040,
            rate_increase_s=0.200,
            rate_decrease_interval_s=0.003,
            additive_bps=0.01 * line_rate_bps,
            hyper_bps=0.10 * line_rate_bps,
            min_rate_bps=0.01 * line_rate_bps,
        )

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class Dcqcn:
    """Rate state of one queue pair."""

    def __init__(self, params: DcqcnParams, start_rate_bps: float | None = None, now: float = 0.0):
        self.p = params
        self.current = min(start_rate_bps or params.line_rate_bps, params.line_rate_bps)
        self.target = self.current
        self.alpha = 1.0
        self.cuts = 0
        self.cnps = 0
        self._stage = 0
        self._cnp_in_period = False
        self._next_alpha = now + params.alpha_update_s
        self._next_increase = float("inf")  # armed by the first cut
        self._last_cut = -float("inf")

    def on_cnp(self, now: float) -> bool:
        """Register a CNP; returns True if it cut the rate."""
        self.update(now)  # alpha as of now
        self.cnps += 1
        self._cnp_in_period = True
        if now - self._last_cut < self.p.rate_decrease_interval_s:
            return False
        self._last_cut = now
        self.target = self.current
        self.current = max(self.p.min_rate_bps, self.current * (1 - self.alpha / 2))
        self.alpha = (1 - self.p.g) * self.alpha + self.p.g
        self._cnp_in_period = False
        self._next_alpha = now + self.p.alpha_update_s
        self._stage = 0
        self._next_increase = now + self.p.rate_increase_s
        self.cuts += 1
        return True

    def update(self, now: float) -> float:
        """Run the timers up to `now`; returns the current rate in b/s."""
        p = self.p
        while self._next_alpha <= now:
            self.alpha = (1 - p.g) * self.alpha + (p.g if self._cnp_in_period else 0.0)
            self._cnp_in_period = False
            self._next_alpha += p.alpha_update_s
        while self._next_increase <= now:
            self._stage += 1
            if self._stage > 2 * p.fast_recovery_stages:
                self.target = min(p.line_rate_bps, self.target + p.hyper_bps)
            elif self._stage > p.fast_recovery_stages:
                self.target = min(p.line_rate_bps, self.target + p.additive_bps)
            self.current = (self.target + self.current) / 2
            if self.current >= p.line_rate_bps * 0.999 and self.target >= p.line_rate_bps:
                self.current = p.line_rate_bps
                self._next_increase = float("inf")  # fully recovered: timer stops
            else:
                self._next_increase += p.rate_increase_s
        return self.current
