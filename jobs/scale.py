"""One scale factor from the emulated fabric to the modelled one.

A GPU's emulated NIC (all its ports: 2 x 100 Mb/s on HPN 7.0) stands for the modelled NIC
(400 Gb/s: a factor of 2,000); NVLink keeps its ratio to the NIC, so the same factor maps it.
Bytes are real and not scaled; a time measured on the emulation divided by the factor is the
modelled time, and a rate times the factor the modelled rate. `raw()` keeps the emulated units
(factor 1).
"""

from __future__ import annotations

from dataclasses import dataclass

MODELLED_GBPS = 400.0


@dataclass(frozen=True)
class Scale:
    emulated_bps: float
    modelled_bps: float

    def __post_init__(self) -> None:
        if self.emulated_bps <= 0 or self.modelled_bps <= 0:
            raise ValueError("link rates of a scale must be > 0 b/s")

    @property
    def factor(self) -> float:
        return self.modelled_bps / self.emulated_bps

    def time_s(self, emulated_s: float) -> float:
        return emulated_s / self.factor

    def rate_bps(self, emulated_bps: float) -> float:
        return emulated_bps * self.factor

    def describe(self, ports: int = 1) -> str:
        nic = (f"{ports} x {_rate(self.emulated_bps / ports)}" if ports > 1
               else _rate(self.emulated_bps))
        if self.factor == 1.0:
            return f"raw emulated units: NICs of {nic}"
        return (f"an emulated NIC of {nic} stands for {_rate(self.modelled_bps)}: times / "
                f"{self.factor:g}, bandwidths x {self.factor:g}; sizes are real bytes")


def raw(emulated_bps: float) -> Scale:
    return Scale(emulated_bps, emulated_bps)


def _rate(bps: float) -> str:
    for unit, div in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= div:
            return f"{bps / div:g} {unit}"
    return f"{bps:g} b/s"
