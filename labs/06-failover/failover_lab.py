"""Lab 6 — Failover: the routes a controller writes after links fail.

When a link goes down the lab's controller (controller/fabric.py, controller/reconverge.py) marks
both of its ends in `down_ports`, computes shortest-path ECMP routes over the links that still
work, and rewrites only what changed. You write that route computation.

A subtlety decides whether a failed switch blackholes traffic when it comes back: a switch left
with *no* link up cannot forward anyway, so the controller leaves its routes as they were (the
routes of the whole fabric) instead of wiping them. When its links return it forwards at once,
before the controller has even noticed.

Check:  fabric-lab lab check 6 --program failover_lab.py
"""

from __future__ import annotations

from controller.routes import SwitchRoutes, compute_routes
from topos.model import FabricSpec


def live_fabric(spec: FabricSpec, down_ports: set[tuple[str, int]]) -> FabricSpec:
    """A copy of `spec` without the links that are down: a link is down when either of its
    ends, (node, port), is in `down_ports`. Do not modify `spec` (copy.copy it and replace
    its `links` list)."""
    # TODO 1: leave out the links with an end in down_ports.
    return spec


def routes_after(spec: FabricSpec, down_ports: set[tuple[str, int]]) -> dict[str, SwitchRoutes]:
    """What every switch of `spec` should hold with the links in `down_ports` down
    (controller.routes.compute_routes over the live fabric), except that a switch with no link
    up keeps the routes it would have in the whole fabric."""
    plan = compute_routes(live_fabric(spec, down_ports))
    # TODO 2: for every switch left with no link up, take its routes from
    #         compute_routes(spec) instead.
    return plan
