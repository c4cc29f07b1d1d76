"""The addressing plan: IPv4 and MAC per NIC, switch ids and management ports, interface names.

Rules (deterministic, so the same builder parameters always give the same plan):
- NIC j of server (host) i: IPv4 10.0.i.(j+1), prefix /16. These addresses only ever exist inside
  the emulation's namespaces.
- NIC MAC: locally administered 02:00 followed by the four bytes of its IPv4 address
  (10.0.3.2 -> 02:00:0a:00:03:02). A dual-port NIC uses the same IP and MAC on both ports, like a
  bonded NIC: one address reachable through either port (HPN's dual-ToR design).
- Switch port MAC: 02:53:<device id, 16 bit>:<port, 16 bit>.
- Switch device ids 1.. in switch order; gRPC port 9559 + index, runtime CLI (Thrift) port
  9090 + index; CPU port 510.
- P4 port numbers 1.. per switch, in the order links were added; interface `<switch>-eth<port>`.
  NIC ports are numbered 0.. with interface `<nic>-eth<port>`.
"""

from __future__ import annotations

from topos.model import CPU_PORT, FabricSpec

GRPC_PORT_BASE = 9559
THRIFT_PORT_BASE = 9090
NIC_PREFIXLEN = 16


def intf_name(node: str, port: int) -> str:
    """Interface name of port `port` on switch or NIC `node`."""
    return f"{node}-eth{port}"


def nic_ip(server: int, nic: int) -> str:
    if not 0 <= server <= 255 or not 0 <= nic <= 253:
        raise ValueError(f"no address for NIC {nic} of server {server}: the plan 10.0.<server>."
                         f"<nic+1> holds servers 0..255 and NICs 0..253")
    return f"10.0.{server}.{nic + 1}"


def nic_mac(ip: str) -> str:
    octets = [int(x) for x in ip.split(".")]
    return "02:00:" + ":".join(f"{o:02x}" for o in octets)


def switch_port_mac(device_id: int, port: int) -> str:
    raw = [0x02, 0x53, device_id >> 8, device_id & 0xFF, port >> 8, port & 0xFF]
    return ":".join(f"{b:02x}" for b in raw)


def assign_addresses(spec: FabricSpec) -> FabricSpec:
    """Fill in device ids, management ports, NIC addresses and every endpoint's MAC (in place)."""
    for index, sw in enumerate(spec.switches):
        sw.device_id = index + 1
        sw.grpc_port = GRPC_PORT_BASE + index
        sw.thrift_port = THRIFT_PORT_BASE + index
        sw.cpu_port = CPU_PORT
    nic_macs: dict[str, str] = {}
    for server, host in enumerate(spec.hosts):
        for index, nic in enumerate(host.nics):
            nic.ip = nic_ip(server, index)
            nic.mac = nic_mac(nic.ip)
            nic.prefixlen = NIC_PREFIXLEN
            nic_macs[nic.name] = nic.mac
    device_ids = {sw.name: sw.device_id for sw in spec.switches}
    for link in spec.links:
        for end in (link.a, link.b):
            if end.node in device_ids:
                end.mac = switch_port_mac(device_ids[end.node], end.port)
            elif end.node in nic_macs:
                end.mac = nic_macs[end.node]
    return spec
