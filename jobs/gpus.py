"""Servers with GPUs on a fabric: rank = GPU, GPU i of a server = NIC i = rail i.

A fabric's `Host` is a server and each of its NICs carries one GPU (HPN 7.0, AIPod and EFLOPS
pair every accelerator with its own NIC); a NIC has one port or, on HPN 7.0, two (one per
plane). GPUs of one server share an NVLink domain: NVLink moves their data through shared
memory, at a modelled rate, and never touches a fabric link (`jobs.ccl`, jobs/ccl/c/nvlink.c).

`nic_bps` is a GPU's NIC, all its ports (HPN 7.0: 2 x the link rate); `nvlink_bps` = `nic_bps`
x `nvlink_ratio`. The default ratio, 9, is NVLink's rate per GPU and direction over a 400 Gb/s
NIC's: H100/H800-class NVLink moves 900 GB/s per GPU counting both directions, 450 GB/s each
way, against 50 GB/s each way for the NIC (the often quoted "10-20x a 400G NIC" compares
NVLink's two-way figure, 600-900 GB/s, with the NIC's one way). The ratio survives the
scale-down: NICs of 2 x 100 Mb/s get 1.8 Gb/s of NVLink.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topos.model import FabricSpec

NVLINK_RATIO = 9.0


@dataclass(frozen=True)
class Gpu:
    server: str  # the fabric Host's name
    index: int  # local GPU index: GPU i sits beside NIC i
    nic: str  # the NIC's name (its namespace in the emulation)
    ip: str
    rail: int  # the NIC's rail (its index when the fabric names none)
    ports: int = 1  # the NIC's ports (HPN 7.0: one per plane)


@dataclass
class Server:
    name: str
    gpus: list[Gpu] = field(default_factory=list)
    group: int | None = None  # segment / aggregation group


@dataclass
class Cluster:
    servers: list[Server]
    link_bps: float  # the emulated rate of a NIC's link (each port's)
    nvlink_ratio: float = NVLINK_RATIO

    @property
    def ports(self) -> int:
        """Ports per NIC (the fewest any NIC has)."""
        return min((g.ports for g in self.gpus()), default=1)

    @property
    def nic_bps(self) -> float:
        """A GPU's emulated NIC rate: all its ports."""
        return self.link_bps * self.ports

    @property
    def nvlink_bps(self) -> float:
        return self.nic_bps * self.nvlink_ratio

    @property
    def gpus_per_server(self) -> int:
        return max((len(s.gpus) for s in self.servers), default=0)

    def gpus(self) -> list[Gpu]:
        """Every GPU, server by server, in local index order."""
        return [g for s in self.servers for g in s.gpus]

    def gpu(self, nic: str) -> Gpu:
        for g in self.gpus():
            if g.nic == nic:
                return g
        raise KeyError(f"no GPU beside NIC {nic!r}")

    def server(self, name: str) -> Server:
        for s in self.servers:
            if s.name == name:
                return s
        raise KeyError(f"no server {name!r}")

    @staticmethod
    def same_server(a: Gpu, b: Gpu) -> bool:
        return a.server == b.server


def nic_rate_mbps(spec: FabricSpec) -> float:
    """The rate of the links NICs attach with (the slowest, if they differ)."""
    nics = {n.name for n in spec.host_nics()}
    rates = [ln.rate_mbps for ln in spec.links
             if (ln.a.node in nics or ln.b.node in nics) and ln.rate_mbps]
    if not rates:
        raise ValueError(f"fabric {spec.name!r}: NIC links have no rate; give link_mbps")
    return min(rates)


def cluster_from_fabric(spec: FabricSpec, *, nvlink_ratio: float = NVLINK_RATIO,
                        link_mbps: float | None = None) -> Cluster:
    """One server per fabric host, one GPU per NIC (in the host's NIC order)."""
    if nvlink_ratio <= 0:
        raise ValueError(f"NVLink ratio must be > 0, got {nvlink_ratio}")
    rate = link_mbps if link_mbps is not None else nic_rate_mbps(spec)
    if rate <= 0:
        raise ValueError(f"link rate must be > 0 Mb/s, got {rate}")
    servers = []
    for host in spec.hosts:
        gpus = [Gpu(host.name, i, nic.name, nic.ip, nic.rail if nic.rail is not None else i,
                    max(1, len(spec.links_of(nic.name))))
                for i, nic in enumerate(host.nics)]
        servers.append(Server(host.name, gpus, host.group))
    return Cluster(servers, rate * 1e6, nvlink_ratio)


def nic_gpus(spec: FabricSpec) -> list[Gpu]:
    """One GPU per NIC, each NIC its own server: every flow crosses the fabric."""
    return [Gpu(nic.name, 0, nic.name, nic.ip, nic.rail or 0, max(1, len(spec.links_of(nic.name))))
            for nic in spec.host_nics()]
