"""Run several fabrics side by side on one machine: rename every node and interface with a prefix
and move the switches' management ports, so two networks never meet (tests, experiments)."""

from __future__ import annotations

from topos.model import FabricSpec
from topos.validation import validate
from topos.values import IFNAMSIZ


def prefixed(spec: FabricSpec, prefix: str, grpc_base: int, thrift_base: int) -> FabricSpec:
    """A validated copy of `spec` with `prefix` on every node, NIC and interface name and the
    switches' gRPC/runtime-CLI ports numbered from `grpc_base`/`thrift_base`. Interface names that
    would pass Linux's 15-character limit shorten `-eth` to `-e`."""
    out = FabricSpec.from_dict(spec.to_dict())
    for index, switch in enumerate(out.switches):
        switch.name = prefix + switch.name
        switch.grpc_port = grpc_base + index
        switch.thrift_port = thrift_base + index
    for host in out.hosts:
        host.name = prefix + host.name
        for nic in host.nics:
            nic.name = prefix + nic.name
    for link in out.links:
        for end in (link.a, link.b):
            end.node = prefix + end.node
            end.intf = prefix + end.intf
            if len(end.intf) > IFNAMSIZ:
                end.intf = end.intf.replace("-eth", "-e")
    return validate(out)
