"""Buffer-dependency check of a routing plan: routes that could deadlock under PFC are refused.

A lossless queue is a *channel*: the egress queue of one switch port towards another switch,
`(switch, port)`. A packet that leaves switch A on channel c1 into switch B and then leaves B on
channel c2 makes c1 depend on c2: when c2 is paused and fills, B pauses c1 (PFC). The routes
define the channel dependency graph (Dally and Seitz): for every destination prefix, every
channel A->B it may take, and every next hop B->C the same prefix takes at B, an edge
c(A->B) -> c(B->C). A cycle in that graph is a cyclic buffer dependency: with every queue on it
full, every queue waits for the next and none ever transmits again (PFC deadlock). An acyclic
graph cannot deadlock. Up-down routing of a Clos is acyclic (a packet never turns from down to
up); a bounce after a link failure (up-down-up) or a ring closes a cycle.

    plan = compute_routes(spec)
    check_routes(spec, plan)            # raises CyclicDependency naming the cycle
    plan = acyclic_routes(spec, plan)   # or: drop ECMP members until no cycle is left
    FabricController(..., deadlock_free=True)   # refuses them on every (re)route


Host ports are not channels: a NIC never forwards, so no dependency leaves one.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping

from controller.routes import NextHop, SwitchRoutes
from topos.errors import FabricLabError
from topos.model import FabricSpec

Channel = tuple[str, int]  # (switch, egress port) of a switch-to-switch link
# what makes an edge: (switch B, prefix) whose next hop leaves on the edge's second channel
Cause = tuple[str, str]
log = logging.getLogger(__name__)


class CyclicDependency(FabricLabError, ValueError):
    """The routes close a buffer-dependency cycle; `cycle` lists its channels in order."""

    def __init__(self, cycle: list[Channel], causes: list[list[Cause]]) -> None:
        self.cycle = cycle
        self.causes = causes
        hops = " -> ".join(f"{sw}:{port}" for sw, port in cycle)
        why = "; ".join(f"at {cycle[(i + 1) % len(cycle)][0]} for {', '.join(p for _, p in c[:2])}"
                        f"{' ...' if len(c) > 2 else ''}" for i, c in enumerate(causes))
        super().__init__(f"the routes close a buffer-dependency cycle of {len(cycle)} queues "
                         f"(PFC can deadlock): {hops} -> {cycle[0][0]}:{cycle[0][1]}; "
                         f"the turns: {why}")


def _switch_hops(spec: FabricSpec, hops: Iterable[NextHop]) -> list[NextHop]:
    return [hop for hop in hops if spec.is_switch(hop.neighbour)]


def channel_dependencies(spec: FabricSpec, plan: Mapping[str, SwitchRoutes]
                         ) -> dict[Channel, dict[Channel, list[Cause]]]:
    """channel -> {channel it depends on: [(switch, prefix) whose routes make the turn]}."""
    deps: dict[Channel, dict[Channel, list[Cause]]] = {}
    for name, routes in plan.items():
        for prefix, hops in routes.routes.items():
            for hop in _switch_hops(spec, hops):
                into = (name, hop.port)
                deps.setdefault(into, {})
                far = plan.get(hop.neighbour)
                if far is None:
                    continue
                for onward in _switch_hops(spec, far.routes.get(prefix, ())):
                    causes = deps[into].setdefault((hop.neighbour, onward.port), [])
                    causes.append((hop.neighbour, prefix))
    return deps


def find_cycle(deps: Mapping[Channel, Mapping[Channel, object]]) -> list[Channel] | None:
    """One cycle of the dependency graph (its channels in order), or None if it is acyclic."""
    state: dict[Channel, int] = {}  # 1 on the current path, 2 done
    for start in sorted(deps):
        if state.get(start):
            continue
        path: list[Channel] = [start]
        iters = [iter(sorted(deps.get(start, ())))]
        state[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
                continue
            seen = state.get(nxt)
            if seen == 1:
                return path[path.index(nxt):]
            if seen is None:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(deps.get(nxt, ()))))
    return None


def check_routes(spec: FabricSpec, plan: Mapping[str, SwitchRoutes]) -> None:
    """Raise CyclicDependency if the plan's routes close a buffer-dependency cycle."""
    deps = channel_dependencies(spec, plan)
    cycle = find_cycle(deps)
    if cycle is not None:
        causes = [deps[c][cycle[(i + 1) % len(cycle)]] for i, c in enumerate(cycle)]
        raise CyclicDependency(cycle, causes)


def acyclic_routes(spec: FabricSpec, plan: Mapping[str, SwitchRoutes]) -> dict[str, SwitchRoutes]:
    """A copy of `plan` without buffer-dependency cycles, made by removing ECMP members that
    lead into or out of a turn on a cycle (never a prefix's last next hop); CyclicDependency if
    a cycle is left that no such removal breaks. Group ids are renumbered for the smaller sets."""
    out = {name: copy.deepcopy(routes) for name, routes in plan.items()}
    while True:
        deps = channel_dependencies(spec, out)
        cycle = find_cycle(deps)
        if cycle is None:
            break
        for i, channel in enumerate(cycle):
            onward = cycle[(i + 1) % len(cycle)]
            cuts = []  # (switch, prefix, port): a next hop whose removal breaks this turn
            for sw, prefix in deps[channel][onward]:
                if len(out[channel[0]].routes.get(prefix, ())) > 1:
                    cuts.append((channel[0], prefix, channel[1]))  # not into the turn
                elif len(out[sw].routes[prefix]) > 1:
                    cuts.append((sw, prefix, onward[1]))  # not out of it
                else:
                    break  # this turn has a cause no removal touches
            else:
                for sw, prefix, port in cuts:
                    out[sw].routes[prefix] = tuple(h for h in out[sw].routes[prefix]
                                                   if h.port != port)
                break
        else:
            check_routes(spec, out)  # raises, naming the cycle no removal breaks
    for routes in out.values():
        routes.groups = {}
        for hops in routes.routes.values():
            routes.groups.setdefault(hops, len(routes.groups) + 1)
    return out


def deadlock_free_routes(spec: FabricSpec, plan: Mapping[str, SwitchRoutes]
                         ) -> dict[str, SwitchRoutes]:
    """`plan` if it closes no buffer-dependency cycle; otherwise it is refused (logged, with
    the cycle) and `acyclic_routes` of it returned instead."""
    try:
        check_routes(spec, plan)
    except CyclicDependency as refused:
        log.warning("routes refused: %s; installing them without the ECMP members that close "
                    "the cycle", refused)
        return acyclic_routes(spec, plan)
    return dict(plan)
