"""Fabrics for the failover tests: node and interface names start with `fo` and management ports
sit in a range of their own, so these runs never meet other tests' networks."""

from __future__ import annotations

from topos import FabricSpec, build_fabric, validate

PREFIX = "fo"
GRPC_BASE = 39559
THRIFT_BASE = 39090


def fo_fabric(name: str, **scale) -> FabricSpec:
    """`build_fabric(name, **scale)` with every name prefixed and management ports moved."""
    spec = FabricSpec.from_dict(build_fabric(name, **scale).to_dict())
    for index, sw in enumerate(spec.switches):
        sw.name = PREFIX + sw.name
        sw.grpc_port = GRPC_BASE + index
        sw.thrift_port = THRIFT_BASE + index
    for host in spec.hosts:
        host.name = PREFIX + host.name
        for nic in host.nics:
            nic.name = PREFIX + nic.name
    for link in spec.links:
        for end in (link.a, link.b):
            end.node = PREFIX + end.node
            end.intf = PREFIX + end.intf
    return validate(spec)
