"""Mininet integration: a FabricSpec becomes a network of P4 switch nodes and NIC hosts.

- `targets`: the switch programs (p4switch, BMv2) and their argv;
- `nodes`: the P4 switch node (start, readiness probe, SIGTERM/SIGKILL stop) and the NIC host;
- `network`: FabricNetwork, the build/start/stop lifecycle with signal handling;
- `runstate` / `cleanup`: records of what a run created, and `fabric-lab clean`.
"""

from topos.mininet.cleanup import clean
from topos.mininet.network import FabricNetwork
from topos.mininet.nodes import FabricHost, P4Switch, SwitchStartError
from topos.mininet.targets import BMV2, P4SWITCH, TARGETS, Target, select_target

__all__ = ["BMV2", "P4SWITCH", "TARGETS", "FabricHost", "FabricNetwork", "P4Switch",
           "SwitchStartError", "Target", "clean", "select_target"]
