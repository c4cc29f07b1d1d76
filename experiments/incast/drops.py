"""Drops by counter balance, for a target whose traffic manager counts none (BMv2).

BMv2 discards a packet that meets a full egress queue without counting it anywhere. The P4
program counts every packet received per port (`rx_port_counter`) and sent per port
(`tx_port_counter`), and the PFC frames among them (`pfc_rx_counter`, `pfc_tx_counter`). Over a
switch, the data packets that came in on some ports minus those that went out on the ports
they are routed to is what the switch dropped on the way, once its queues are empty again:

    drops = (rx - pfc_rx on the inputs) - (tx - pfc_tx on the outputs)

In the incast: at the receiver's leaf, inputs = its port from the spine, outputs = the receiver's
and the victim's ports (the congested queue, and one that never fills); at the spine, its port
from the first leaf towards its port to the second; at the first leaf, the senders' and the
victim's ports towards the uplink. Balances are read before and after a trial; `settled` reads
until the balance stops moving (BMv2 may still be sending a slowed queue's backlog). On p4switch
the balance agrees with the traffic manager's tail drops (tests/congestion).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from experiments.framework.telemetry import parse_cli_values
from experiments.incast.lab import IncastRoles
from mechanisms import pfc, port_io
from targets import RuntimeCli
from topos.model import FabricSpec

RX = port_io.RX_PORT_COUNTER
TX = port_io.TX_PORT_COUNTER
PFC_RX = pfc.RX_COUNTER
PFC_TX = pfc.TX_COUNTER


@dataclass(frozen=True)
class Balance:
    """Data packets in on `inputs` minus out on `outputs` of one switch (cumulative)."""

    switch: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    def commands(self) -> list[str]:
        return ([f"counter_read {name} {p}" for p in self.inputs for name in (RX, PFC_RX)]
                + [f"counter_read {name} {p}" for p in self.outputs for name in (TX, PFC_TX)])

    def read(self, channel: RuntimeCli) -> int:
        values = parse_cli_values(channel.batch(self.commands()))

        def get(name: str, port: int) -> int:
            key = f"{name}[{port}]"
            if key not in values:
                raise ValueError(f"{self.switch}: no value for {key} in the runtime CLI output")
            return values[key]

        received = sum(get(RX, p) - get(PFC_RX, p) for p in self.inputs)
        sent = sum(get(TX, p) - get(PFC_TX, p) for p in self.outputs)
        return received - sent


def incast_balances(spec: FabricSpec, roles: IncastRoles) -> dict[str, Balance]:
    """`congested` (the receiver's leaf), `spine` and `leaf` (the senders' leaf)."""
    leaf1, spine, leaf0 = roles.congested[0], roles.spine_down[0], roles.leaf_up[0]
    senders = [*roles.senders, roles.victim_src]
    return {
        "congested": Balance(leaf1, (spec.port_to(leaf1, spine),),
                             (roles.congested[1], roles.victim_port[1])),
        "spine": Balance(spine, (spec.port_to(spine, leaf0),), (roles.spine_down[1],)),
        "leaf": Balance(leaf0, tuple(spec.port_to(leaf0, nic) for nic in senders),
                        (roles.leaf_up[1],)),
    }


def read_balances(channels: Mapping[str, RuntimeCli],
                  balances: Mapping[str, Balance]) -> dict[str, int]:
    return {key: b.read(channels[b.switch]) for key, b in balances.items()}


def settled(channels: Mapping[str, RuntimeCli], balances: Mapping[str, Balance],
            *, interval_s: float = 0.2, timeout_s: float = 10.0) -> dict[str, int]:
    """The balances once two reads `interval_s` apart agree (queues drained), or raise."""
    deadline = time.monotonic() + timeout_s
    last = read_balances(channels, balances)
    while True:
        time.sleep(interval_s)  # the interval between two probes, not a wait for readiness
        now = read_balances(channels, balances)
        if now == last:
            return now
        if time.monotonic() > deadline:
            raise RuntimeError(f"switch counters still moving after {timeout_s:g} s: {now}")
        last = now
