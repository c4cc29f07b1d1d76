"""Mininet integration: a FabricSpec becomes a network of P4 switch nodes and NIC hosts.

- `nodes`: the P4 switch node (start, readiness probe, SIGTERM/SIGKILL stop) and the NIC host;
- `network`: FabricNetwork, the build/start/stop lifecycle with signal handling, and
  `fabric_network`, which builds a FabricNetwork or (options naming other servers) a
  `cluster.ClusterNetwork`;
- `failures`: failing links and switches; `cli`: the Mininet CLI of a running fabric;
- `procs`: starting processes that end with the lab (parent-death signal), stopping them;
- `runstate` / `cleanup` / `leftovers`: records of what a run created, `fabric-lab clean`, and
  what a new run does with a killed run's leftovers.

The names below are imported on first use, so `topos.mininet.procs` and `runstate` can be used
without loading Mininet.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FabricHost": "nodes", "P4Switch": "nodes",
    "SwitchStartError": "nodes", "FabricNetwork": "network", "fabric_network": "network",
    "clean": "cleanup",
    "LeftoverError": "leftovers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
