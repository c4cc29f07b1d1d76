"""Lab 6 — Failover: the routes a controller writes after links fail. Solution."""

from __future__ import annotations

import copy

from controller.routes import SwitchRoutes, compute_routes
from topos.model import FabricSpec


def live_fabric(spec: FabricSpec, down_ports: set[tuple[str, int]]) -> FabricSpec:
    """A copy of `spec` without the links that have an end in `down_ports`."""
    live = copy.copy(spec)
    live.links = [ln for ln in spec.links
                  if (ln.a.node, ln.a.port) not in down_ports
                  and (ln.b.node, ln.b.port) not in down_ports]
    return live


def routes_after(spec: FabricSpec, down_ports: set[tuple[str, int]]) -> dict[str, SwitchRoutes]:
    """Routes over the live fabric; a switch with no link up keeps its whole-fabric routes."""
    live = live_fabric(spec, down_ports)
    plan = compute_routes(live)
    cut_off = [sw.name for sw in spec.switches if not live.links_of(sw.name)]
    if cut_off:
        whole = compute_routes(spec)
        plan.update((name, whole[name]) for name in cut_off)
    return plan
