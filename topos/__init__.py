"""Fabric model (plain data), builders, validation and drawing; `topos.mininet` makes networks.

    from topos import build_fabric
    spec = build_fabric("hpn7", segments=2)
    spec.switch("ta-s0r0"), spec.port_to("ta-s0r0", "agga0"), spec.to_networkx()
"""

from topos import relocate
from topos.builders import FABRICS, build_fabric, fabric_parameters
from topos.model import Endpoint, FabricSpec, Host, Link, Nic, Switch
from topos.validation import FabricError, problems, validate

__all__ = ["FABRICS", "Endpoint", "FabricError", "FabricSpec", "Host", "Link", "Nic", "Switch",
           "build_fabric", "fabric_parameters", "problems", "relocate", "validate"]
