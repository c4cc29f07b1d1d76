"""How big a fabric is, and how big one may be on this lab's plan.

Every builder computes its `FabricSize` from its scale parameters before it builds anything
(`topos.builders.SIZES`), so `fattree k=1000000` is refused at once instead of after minutes of
building; `topos.validation` checks a fabric file against the same limits. The limits:

- switches: 469, the runtime CLI ports (9090 up) would otherwise run into the gRPC ports
  (9559 up) of the addressing plan (`topos.addressing`);
- servers: 256 and NICs per server: 254, the address plan 10.0.<server>.<NIC + 1>;
- ports on one switch: 509, P4 ports 1.. below the CPU port (510);
- interfaces: 8192 (4096 links), far more than one machine's switch processes forward.
"""

from __future__ import annotations

from dataclasses import dataclass

from topos.addressing import GRPC_PORT_BASE, THRIFT_PORT_BASE
from topos.model import CPU_PORT

MAX_SWITCHES = GRPC_PORT_BASE - THRIFT_PORT_BASE
MAX_SERVERS = 256
MAX_NICS_PER_SERVER = 254
MAX_SWITCH_PORTS = CPU_PORT - 1
MAX_INTERFACES = 8192


@dataclass(frozen=True)
class FabricSize:
    """What a fabric needs: switches, servers, NICs on the largest server, links, and ports on
    the busiest switch."""

    switches: int
    servers: int
    nics_per_server: int
    links: int
    switch_ports: int

    @property
    def interfaces(self) -> int:
        return 2 * self.links

    def problems(self, addressed: bool = True) -> list[str]:
        """Each limit this size passes, a phrase each; `addressed`: the builders' address and
        port plan applies (a fabric file carries its own: only the interfaces are counted)."""
        checks = [("interfaces", self.interfaces, MAX_INTERFACES, "2 per link")]
        if addressed:
            checks = [("switches", self.switches, MAX_SWITCHES,
                       "the runtime CLI ports 9090.. would reach the gRPC ports 9559.."),
                      ("servers", self.servers, MAX_SERVERS, "addresses 10.0.<server>.*"),
                      ("NICs per server", self.nics_per_server, MAX_NICS_PER_SERVER,
                       "addresses 10.0.*.<NIC + 1>"),
                      ("ports on one switch", self.switch_ports, MAX_SWITCH_PORTS,
                       f"P4 ports below the CPU port {CPU_PORT}"), *checks]
        return [f"needs {value} {what} (at most {limit}: {why})"
                for what, value, limit, why in checks if value > limit]


__all__ = ["MAX_INTERFACES", "MAX_NICS_PER_SERVER", "MAX_SERVERS", "MAX_SWITCHES",
           "MAX_SWITCH_PORTS", "FabricSize"]
