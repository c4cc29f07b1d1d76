"""Uplink conditions of `lb-compare`: even, one slower uplink, an uplink that degrades mid-run.

The source leaf's uplinks are made the bottleneck inside the switch: their egress queues are
served at a little under the link rate (`set_queue_rate`, packets/s, the same runtime CLI
command on p4switch and BMv2), so queues build where the switch can see them (a queue-aware
DLB reads their depth at dequeue) instead of in the kernel's shaper behind the port.
- `even`: every uplink at that rate;
- `slow-uplink`: the first uplink at `slow_factor` of it from the start (a slower or partly
  failed link, or one carrying a background flow this leaf cannot see);
- `degrade`: the first uplink drops to `slow_factor` after `degrade_after` of the run's ideal
  time, and is restored after the run.

    rates = UplinkRates(run_cli, uplink_ports, link_mbps=20.0, slow_factor=0.25)
    with rates.scenario("degrade", ideal_s=2.0):
        lab.run_flows(...)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

SCENARIOS = ("even", "slow-uplink", "degrade")
FRAME_BYTES = 1090  # a full RoCEv2 data frame of 1024 B payload with the reorder tag
SERVICE_SHARE = 0.95  # queue service rate / link rate: the switch queue is the bottleneck


def check_scenarios(names: list[str]) -> list[str]:
    bad = [n for n in names if n not in SCENARIOS]
    if bad:
        raise ValueError(f"unknown lb-compare scenario(s) {', '.join(bad)}; choose from "
                         f"{', '.join(SCENARIOS)}")
    return names


def link_pps(link_mbps: float) -> int:
    """Queue service rate (packets/s) a little under the link's rate in full frames."""
    return max(1, int(link_mbps * 1e6 * SERVICE_SHARE / (FRAME_BYTES * 8)))


class UplinkRates:
    """Queue rates of one leaf's uplink ports, set through a runtime CLI callable."""

    def __init__(self, run_cli: Callable[[list[str]], object], ports: list[int], *,
                 link_mbps: float, slow_factor: float, depth: int = 128,
                 degrade_after: float = 0.3) -> None:
        if not 0 < slow_factor <= 1:
            raise ValueError(f"slow_factor must be in (0, 1], got {slow_factor}")
        self.run_cli = run_cli
        self.ports = list(ports)
        self.normal = link_pps(link_mbps)
        self.slow = max(1, int(self.normal * slow_factor))
        self.depth = depth
        self.degrade_after = degrade_after
        self._set: dict[int, int] = {}

    def apply(self, slow_first: bool) -> None:
        want = {port: self.normal for port in self.ports}
        if slow_first:
            want[self.ports[0]] = self.slow
        commands = [f"set_queue_rate {pps} {port}" for port, pps in want.items()
                    if self._set.get(port) != pps]
        if not self._set:
            commands = [f"set_queue_depth {self.depth} {port}" for port in self.ports] + commands
        if commands:
            self.run_cli(commands)
        self._set.update(want)

    def forget(self) -> None:
        """After a pipeline push: set everything again on the next apply (cheap, and safe
        on targets that reset queue settings with the pipeline)."""
        self._set.clear()

    @contextlib.contextmanager
    def scenario(self, name: str, ideal_s: float) -> Iterator[None]:
        check_scenarios([name])
        self.apply(slow_first=name == "slow-uplink")
        timer = None
        if name == "degrade":
            timer = threading.Timer(self.degrade_after * ideal_s, self.apply, (True,))
            timer.daemon = True
            timer.start()
        try:
            yield
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()
                self.apply(slow_first=False)
