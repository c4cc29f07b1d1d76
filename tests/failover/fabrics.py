"""Fabrics for the failover tests: node and interface names start with `fo` and management ports
sit in a range of their own, so these runs never meet other tests' networks."""

from __future__ import annotations

from topos import FabricSpec, build_fabric
from topos.relocate import prefixed

PREFIX = "fo"
GRPC_BASE = 39559
THRIFT_BASE = 39090


def fo_fabric(name: str, **scale) -> FabricSpec:
    """`build_fabric(name, **scale)` with every name prefixed and management ports moved."""
    return prefixed(build_fabric(name, **scale), PREFIX, GRPC_BASE, THRIFT_BASE)
