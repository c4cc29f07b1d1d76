"""Two-rate three-colour meters as BMv2 implements them (`src/bm_sim/meters.cpp`).

BMv2 keeps, per meter, two token buckets checked in order PIR then CIR. Each bucket is refilled
with floor(µs since the origin * rate) tokens in total (capped at its burst size); a packet
that finds fewer tokens than it needs (1 for a packets meter, its length for a bytes meter)
in the PIR bucket is RED, else, taking them, in the CIR bucket YELLOW, else GREEN (and both
buckets give up their tokens). An unconfigured meter says GREEN.

Rates: the BMv2 CLI takes them in units per microsecond (`meter_set_rates m i 0.5:10 1:20`),
P4Runtime in units per second; PI divides by 10^6 (`MeterConfig.from_cli_rates` and
`MeterConfig.cli_rates` convert).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from p4switch.runtime.errors import invalid, unimplemented

GREEN, YELLOW, RED = 0, 1, 2


@dataclass(frozen=True)
class MeterConfig:
    """Committed and peak rates (units per second) and bursts (units), as in P4Runtime."""

    cir: int
    cburst: int
    pir: int
    pburst: int

    def validate(self) -> None:
        for name in ("cir", "cburst", "pir", "pburst"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise invalid(f"meter {name} must be a non-negative integer, got {value!r}")
        if max(self.cburst, self.pburst) > 0xFFFFFFFF:
            raise unimplemented("meter burst sizes above 2**32 - 1 are not supported")
        if self.pir < self.cir:
            raise invalid(f"meter PIR {self.pir} is below CIR {self.cir}")

    def cli_rates(self) -> list[tuple[float, int]]:
        """[(CIR per µs, CBS), (PIR per µs, PBS)], BMv2 CLI units."""
        return [(self.cir / 1e6, self.cburst), (self.pir / 1e6, self.pburst)]

    @classmethod
    def from_cli_rates(cls, rates: list[tuple[float, int]]) -> MeterConfig:
        if len(rates) != 2:
            raise invalid(f"a two-rate meter needs 2 rates (CIR:CBS PIR:PBS), got {len(rates)}")
        (cir, cbs), (pir, pbs) = rates
        return cls(round(cir * 1e6), int(cbs), round(pir * 1e6), int(pbs))


class MeterCell:
    """One meter instance (an index of a meter array, or a table entry's direct meter)."""

    __slots__ = ("_buckets", "_rates", "config", "unit")

    def __init__(self, unit: str, config: MeterConfig | None = None,
                 rates: list[tuple[float, int]] | None = None) -> None:
        if unit not in ("packets", "bytes"):
            raise ValueError(f"meter unit must be 'packets' or 'bytes', not {unit!r}")
        self.unit = unit
        self.config: MeterConfig | None = None
        self._buckets: list[list] = []
        self._rates: list[tuple[float, int]] = []
        if rates is not None:
            self.set_rates(rates)
        elif config is not None:
            self.set_config(config)

    def set_config(self, config: MeterConfig | None) -> None:
        if config is None:
            self.reset()
            return
        config.validate()
        self.config = config
        self._set(config.cli_rates())

    def set_rates(self, rates: list[tuple[float, int]]) -> None:
        """BMv2 CLI form: [(CIR per µs, CBS), (PIR per µs, PBS)]."""
        if len(rates) != 2:
            raise invalid(f"a two-rate meter needs 2 rates, got {len(rates)}")
        (cir, cbs), (pir, pbs) = rates
        if not (math.isfinite(cir) and math.isfinite(pir)):
            raise invalid("meter rates must be finite numbers")
        if cir < 0 or pir < 0 or cbs < 0 or pbs < 0:
            raise invalid("meter rates and bursts must be non-negative")
        if pir < cir:
            raise invalid(f"meter PIR {pir} is below CIR {cir}")
        self.config = MeterConfig.from_cli_rates(rates)
        self._set(rates)

    def _set(self, rates: list[tuple[float, int]]) -> None:
        (cir, cbs), (pir, pbs) = rates
        # [rate per µs, burst, tokens, tokens handed out so far, colour when short]
        self._buckets = [[float(pir), int(pbs), int(pbs), 0, RED],
                         [float(cir), int(cbs), int(cbs), 0, YELLOW]]
        self._rates = rates

    def rates(self) -> list[tuple[float, int]]:
        """The configured rates, CLI form (CIR first); empty when unconfigured."""
        return list(self._rates) if self._buckets else []

    def reset(self) -> None:
        self.config = None
        self._buckets = []

    def execute(self, nbytes: int, now_us: int) -> int:
        """The colour for a packet of nbytes (ingress length) seen at now_us."""
        if not self._buckets:
            return GREEN
        need = 1 if self.unit == "packets" else nbytes
        for bucket in self._buckets:
            total = int(now_us * bucket[0])
            tokens = bucket[2] + (total - bucket[3])
            bucket[3] = total
            bucket[2] = tokens if tokens < bucket[1] else bucket[1]
            if bucket[2] < need:
                return bucket[4]
            bucket[2] -= need
        return GREEN
