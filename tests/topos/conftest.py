"""Fixtures of the fabric model and Mininet tests; puts the repository root on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from topos import FABRICS, build_fabric  # noqa: E402
from topos.model import FabricSpec  # noqa: E402


@pytest.fixture(params=sorted(FABRICS))
def any_fabric(request: pytest.FixtureRequest) -> FabricSpec:
    """Each registered fabric at its default scale."""
    return build_fabric(request.param)


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
