"""The fabric model: plain data describing switches, hosts (servers with NICs) and links.

Nothing here knows about Mininet or routing policy. A `FabricSpec` is built by one of the
builders in `topos.builders`, checked by `topos.validation.validate()`, and exported to JSON and
back exactly (`to_json` / `from_json`).

Terms used throughout:
- A **switch** has a role ("tor", "agg", "leaf", "spine", "superspine", ...), a tier (1 = the tier
  hosts attach to) and optional plane / rail / group labels (group = HPN segment, AIPod
  aggregation group, BiGraph side).
- A **host** is a server; it holds one or more **NICs** (one per GPU on an AI server). Each NIC is
  one network endpoint with one IPv4 address and one MAC, and one or more **ports** (HPN's
  dual-port NIC has two, port 0 to plane A and port 1 to plane B). In the emulation every NIC is
  its own network namespace, named after the NIC, with one interface per port.
- A **link** joins two endpoints: (switch, P4 port number) or (NIC, NIC port index), each with
  its interface name and MAC, and carries the emulated rate, delay and queue depth.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

SCHEMA_VERSION = 1
CPU_PORT = 510
DROP_PORT = 511


@dataclass
class Switch:
    """One P4 switch and its management plan (device id, gRPC and runtime CLI ports)."""

    name: str
    role: str
    tier: int
    plane: str | None = None
    rail: int | None = None
    group: int | None = None
    device_id: int = 0
    grpc_port: int = 0
    thrift_port: int = 0
    cpu_port: int = CPU_PORT

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


@dataclass
class Nic:
    """One NIC: a network endpoint (one namespace in the emulation) with one IP and one MAC."""

    name: str
    ip: str = ""
    mac: str = ""
    rail: int | None = None
    prefixlen: int = 16


@dataclass
class Host:
    """A server holding NICs; `group` is its segment or aggregation group, if the fabric has one."""

    name: str
    nics: list[Nic] = field(default_factory=list)
    group: int | None = None


@dataclass
class Endpoint:
    """One end of a link. `port` is the P4 port number on a switch, the port index on a NIC."""

    node: str
    port: int
    intf: str
    mac: str = ""


@dataclass
class Link:
    """A point-to-point link; rate in Mb/s, one-way delay in ms, queue depth in packets, MTU
    in bytes (IP packet; both ends and the patch between them).

    None means "not shaped" for that property (the MTU: the kernel's 1500).
    """

    a: Endpoint
    b: Endpoint
    rate_mbps: float | None = None
    delay_ms: float | None = None
    queue_pkts: int | None = None
    mtu: int | None = None

    def other(self, node: str) -> Endpoint:
        """The endpoint facing `node` (the far end of this link as seen from `node`)."""
        if self.a.node == node:
            return self.b
        if self.b.node == node:
            return self.a
        raise KeyError(f"link {self.a.intf}<->{self.b.intf} does not touch {node!r}")

    def end(self, node: str) -> Endpoint:
        """The endpoint on `node`."""
        if self.a.node == node:
            return self.a
        if self.b.node == node:
            return self.b
        raise KeyError(f"link {self.a.intf}<->{self.b.intf} does not touch {node!r}")


@dataclass
class FabricSpec:
    """A fabric: what was asked for (`kind`, `params`) and what it is (switches, hosts, links)."""

    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    switches: list[Switch] = field(default_factory=list)
    hosts: list[Host] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    description: str = ""

    # ---- lookups -------------------------------------------------------------------------
    def switch(self, name: str) -> Switch:
        for sw in self.switches:
            if sw.name == name:
                return sw
        raise KeyError(f"no switch named {name!r} in fabric {self.name!r}")

    def host(self, name: str) -> Host:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"no host named {name!r} in fabric {self.name!r}")

    def nic(self, name: str) -> Nic:
        for host in self.hosts:
            for nic in host.nics:
                if nic.name == name:
                    return nic
        raise KeyError(f"no NIC named {name!r} in fabric {self.name!r}")

    def host_of(self, nic_name: str) -> Host:
        for host in self.hosts:
            if any(nic.name == nic_name for nic in host.nics):
                return host
        raise KeyError(f"no NIC named {nic_name!r} in fabric {self.name!r}")

    def host_nics(self) -> list[Nic]:
        """Every NIC of every host, in host order."""
        return [nic for host in self.hosts for nic in host.nics]

    def nic_by_ip(self, ip: str) -> Nic:
        for nic in self.host_nics():
            if nic.ip == ip:
                return nic
        raise KeyError(f"no NIC has address {ip} in fabric {self.name!r}")

    def is_switch(self, name: str) -> bool:
        return any(sw.name == name for sw in self.switches)

    def links_of(self, node: str) -> list[Link]:
        """Links touching a switch or a NIC, ordered by the port number on `node`."""
        found = [ln for ln in self.links if node in (ln.a.node, ln.b.node)]
        return sorted(found, key=lambda ln: ln.end(node).port)

    def ports(self, switch: str) -> dict[int, str]:
        """P4 port number -> interface name for one switch."""
        return {ln.end(switch).port: ln.end(switch).intf for ln in self.links_of(switch)}

    def neighbours(self, node: str) -> list[str]:
        return [ln.other(node).node for ln in self.links_of(node)]

    def ports_to(self, switch: str, neighbour: str) -> list[int]:
        """P4 ports of `switch` whose link leads to `neighbour` (a switch or a NIC)."""
        return [ln.end(switch).port for ln in self.links_of(switch)
                if ln.other(switch).node == neighbour]

    def port_to(self, switch: str, neighbour: str) -> int:
        """The single P4 port of `switch` towards `neighbour`; error if none or several."""
        ports = self.ports_to(switch, neighbour)
        if len(ports) != 1:
            raise KeyError(f"{switch} has {len(ports)} ports to {neighbour!r} "
                           f"(use ports_to for parallel links)")
        return ports[0]

    def tiers(self) -> dict[int, list[Switch]]:
        """Tier number -> switches of that tier, tiers ascending."""
        out: dict[int, list[Switch]] = {}
        for sw in sorted(self.switches, key=lambda s: s.tier):
            out.setdefault(sw.tier, []).append(sw)
        return out

    def attachments(self, nic_name: str) -> list[tuple[str, int]]:
        """(switch, switch port) pairs a NIC is plugged into, in NIC-port order."""
        return [(ln.other(nic_name).node, ln.other(nic_name).port)
                for ln in self.links_of(nic_name)]

    def with_mtu(self, mtu: int | None) -> FabricSpec:
        """This fabric with every link's MTU `mtu` (a copy)."""
        return replace(self, links=[replace(ln, mtu=mtu) for ln in self.links])

    def to_networkx(self) -> nx.MultiGraph:
        """Switches and NICs as nodes (attribute `kind`), one edge per link with its ports."""
        import networkx as nx

        graph = nx.MultiGraph(name=self.name)
        for sw in self.switches:
            graph.add_node(sw.name, kind="switch", **asdict(sw))
        for host in self.hosts:
            for nic in host.nics:
                graph.add_node(nic.name, kind="nic", host=host.name, **asdict(nic))
        for ln in self.links:
            graph.add_edge(ln.a.node, ln.b.node, ports={ln.a.node: ln.a.port, ln.b.node: ln.b.port},
                           intfs=(ln.a.intf, ln.b.intf), rate_mbps=ln.rate_mbps)
        return graph

    # ---- JSON ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION, **asdict(self)}

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FabricSpec:
        """The fabric `to_dict` wrote; every field's type checked (`topos.fabric_file`)."""
        from topos.fabric_file import spec_from_dict

        return spec_from_dict(data)

    @classmethod
    def from_json(cls, text: str) -> FabricSpec:
        return cls.from_dict(json.loads(text))
