"""Fabrics for the failover tests: node and interface names start with `fo` and management ports
sit in a range of their own, so these runs never meet other tests' networks."""

from __future__ import annotations

from tests.ports import FABRICS
from topos import FabricSpec, build_fabric

PREFIX = FABRICS["failover"].prefix


def fo_fabric(name: str, **scale) -> FabricSpec:
    """`build_fabric(name, **scale)` with every name prefixed and management ports moved."""
    return FABRICS["failover"].apply(build_fabric(name, **scale))
