"""Digest configuration: samples are dropped until the controller configures the digest."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from p4switch.runtime.errors import invalid, not_found


@dataclass(frozen=True)
class DigestSettings:
    max_list_size: int = 1
    max_timeout_ns: int = 0
    ack_timeout_ns: int = 0


DigestSink = Callable[[str, tuple[int, ...]], None]


class DigestConfig:
    """Which digests are enabled, and where their samples go.

    The switch sets `sink`; the engine calls `emit` for every `digest()` a packet makes.
    Batching (max_list_size / timeouts) and acks are the sink's business.
    """

    def __init__(self, names: list[str] | None = None) -> None:
        self.names = list(names or [])
        self.sink: DigestSink | None = None
        self._settings: dict[str, DigestSettings] = {}
        self.dropped = 0

    def configure(self, name: str, max_list_size: int = 1, max_timeout_ns: int = 0,
                  ack_timeout_ns: int = 0) -> None:
        self._known(name)
        if max_list_size < 0 or max_timeout_ns < 0 or ack_timeout_ns < 0:
            raise invalid(f"digest {name}: negative configuration value")
        self._settings[name] = DigestSettings(max_list_size, max_timeout_ns, ack_timeout_ns)

    def unconfigure(self, name: str) -> None:
        self._known(name)
        if self._settings.pop(name, None) is None:
            raise not_found(f"digest {name} is not configured")

    def settings(self, name: str) -> DigestSettings | None:
        return self._settings.get(name)

    def configured(self) -> dict[str, DigestSettings]:
        return dict(self._settings)

    def emit(self, name: str, values: tuple[int, ...]) -> None:
        if name in self._settings and self.sink is not None:
            self.sink(name, values)
        else:
            self.dropped += 1

    def reset(self) -> None:
        self._settings.clear()
        self.dropped = 0

    def _known(self, name: str) -> None:
        if self.names and name not in self.names:
            raise not_found(f"no digest named {name!r}")
