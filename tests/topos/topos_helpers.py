"""Helpers shared by the fabric tests (a uniquely named module, so imports never pick up another
area's conftest)."""

from __future__ import annotations

from pathlib import Path

from topos.model import FabricSpec

# Management ports of the switches in tests are moved away from the defaults (9559.., 9090..),
# so they never meet a switch someone else runs on this machine.
PORT_SHIFT = 21000
FAKE_SWITCH = Path(__file__).with_name("fake_switch.py")


def shifted(spec: FabricSpec, shift: int = PORT_SHIFT) -> FabricSpec:
    for sw in spec.switches:
        sw.grpc_port += shift
        sw.thrift_port += shift
    return spec


def root_interfaces(names: list[str]) -> list[str]:
    """Those of `names` that exist in the root namespace."""
    return [n for n in names if Path("/sys/class/net", n).exists()]


def plan_interfaces(spec: FabricSpec) -> list[str]:
    return [end.intf for ln in spec.links for end in (ln.a, ln.b)]
