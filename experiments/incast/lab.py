"""The incast's fabric: a small leaf-spine and the roles its hosts and queues play, on the
framework's `CongestionLab` (switch queues as the bottleneck; `experiments.framework.congestion_lab`).

    spec, roles = incast_fabric(senders=3)
    with CongestionLab(spec, host_pps=2400, fabric_pps=9600, link_mbps=20) as lab:
        lab.configure(CongestionConfig(ecn=EcnProfile(5, 20, 0.2)))
        lab.agent(roles.receiver) ...
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.framework.congestion_lab import DATA_PRIORITY, PROGRAM, CongestionLab
from topos import FabricSpec, build_fabric
from topos.relocate import prefixed

# CongestionLab, PROGRAM and DATA_PRIORITY live in the framework (cc-compare uses them too);
# the incast's modules and tests import them from here as before.
__all__ = ["DATA_PRIORITY", "PROGRAM", "CongestionLab", "IncastRoles", "incast_fabric"]


@dataclass(frozen=True)
class IncastRoles:
    senders: tuple[str, ...]  # NIC names on the first leaf
    receiver: str  # first NIC of the second leaf
    victim_src: str  # on the first leaf, beside the senders
    victim_dst: str  # on the second leaf, beside the receiver
    congested: tuple[str, int]  # (switch, port) towards the receiver
    victim_port: tuple[str, int]  # (switch, port) towards the victim's destination
    spine_down: tuple[str, int]  # the spine's port to the second leaf (shared upstream)
    leaf_up: tuple[str, int]  # the first leaf's port to the spine (shared upstream)

    def watched(self) -> list[tuple[str, int, int]]:
        """The data queues worth sampling, (switch, port, priority)."""
        return [(*end, DATA_PRIORITY) for end in
                (self.congested, self.victim_port, self.spine_down, self.leaf_up)]


def incast_fabric(senders: int = 3, *, prefix: str = "ic", grpc_base: int = 61000,
                  thrift_base: int = 61500) -> tuple[FabricSpec, IncastRoles]:
    """Two leaves and one spine without kernel shaping; `senders` + 1 NICs per leaf. Names
    start with `prefix` and management ports sit at the given bases, apart from `fabric-lab up`
    fabrics and outside the kernel's ephemeral port range (the tests use another prefix and
    range)."""
    if senders < 1:
        raise ValueError(f"an incast needs at least one sender, got {senders}")
    per_leaf = senders + 1
    spec = prefixed(build_fabric("leafspine", leaves=2, spines=1, hosts_per_leaf=per_leaf,
                                 rate_mbps=None, delay_ms=None, queue_pkts=None),
                    prefix, grpc_base, thrift_base)
    nics = [nic.name for nic in spec.host_nics()]
    first, second = nics[:per_leaf], nics[per_leaf:]
    leaf0, leaf1, spine = (f"{prefix}leaf0", f"{prefix}leaf1", f"{prefix}spine0")
    roles = IncastRoles(
        senders=tuple(first[:senders]), receiver=second[0], victim_src=first[senders],
        victim_dst=second[1],
        congested=(leaf1, spec.port_to(leaf1, second[0])),
        victim_port=(leaf1, spec.port_to(leaf1, second[1])),
        spine_down=(spine, spec.port_to(spine, leaf1)),
        leaf_up=(leaf0, spec.port_to(leaf0, spine)))
    return spec, roles
