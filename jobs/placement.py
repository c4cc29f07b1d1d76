"""Rank order: which GPU runs rank r, and what a placement does to the network.

Orders (`rank_order`):
- `naive`: server by server, GPUs in local order (the order a launcher lists them).
- `topology` (the default of `perf`): AIPod's topology awareness, as NCCL orders its rings:
  ranks grouped by the servers' segment / aggregation group, so ring neighbours cross the
  upper tiers as rarely as possible (`topology_aware_ring`); a ring algorithm then snakes
  through each server's GPUs (`jobs.ccl.algorithms.ring_order`).
- `remap`: EFLOPS' rank remapping for halving-doubling on BiGraph (`hdrm_map`): at most one
  flow on every switch-to-switch link per step. BiGraph with one NIC per server only.

The analysis of a placement, without a network:
- `hdrm_map`: EFLOPS' rank remapping (M hosts per switch, N switches, U0..U{N/2-1} then
  L0..L{N/2-1}; host n on switch n // M). Rank r with low bits l = r mod N and slot s = r div N
  sits in the group given by the parity of r's set bits (upper if even) at switch index
  (l >> 1) + s (upper group) or l >> 1 (lower group), taken mod N/2, in slot s. Partners
  differ in one bit, so they are always in opposite groups (one unique, direct link) and the
  choice of index puts at most one flow on every link per step.
- `link_loads` / `max_link_flows` / `conflicts_per_step`: flows per directed switch-to-switch
  link for a list of (src switch, dst switch) flows and a routing function; `fluid_time`: a
  schedule's time if every link shared its rate equally.
"""


from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

from jobs.ccl.schedule import Schedule
from jobs.gpus import Cluster, Gpu
from topos.model import FabricSpec

T = TypeVar("T")
Route = Callable[[int, int], list[tuple[int, int]]]


def naive(hosts: Sequence[T]) -> list[T]:
    return list(hosts)


def random_order(hosts: Sequence[T], seed: int = 0) -> list[T]:
    out = list(hosts)
    random.Random(seed).shuffle(out)
    return out


def topology_aware_ring(hosts: Sequence[str], groups: Sequence[Sequence[str]]) -> list[str]:
    """Ranks group by group (groups in the order given, hosts in `hosts` order within each)."""
    group_of: dict[str, int] = {}
    for gi, group in enumerate(groups):
        for h in group:
            if h in group_of:
                raise ValueError(f"host {h!r} is in two groups")
            group_of[h] = gi
    missing = [h for h in hosts if h not in group_of]
    if missing:
        raise ValueError(f"hosts in no group: {', '.join(missing)}")
    return sorted(hosts, key=lambda h: group_of[h])  # stable: keeps the order within a group


def ring_crossings(order: Sequence[str], groups: Sequence[Sequence[str]]) -> int:
    """Ring edges (including last -> first) whose ends are in different groups."""
    group_of = {h: gi for gi, group in enumerate(groups) for h in group}
    n = len(order)
    return sum(group_of[order[i]] != group_of[order[(i + 1) % n]] for i in range(n))


def hdrm_map(m: int, n: int) -> list[int]:
    """Rank -> host index for M hosts per switch on an N-switch BiGraph (P = M*N ranks)."""
    if n < 2 or n & (n - 1):
        raise ValueError(f"BiGraph switch count N must be a power of two >= 2, got {n}")
    if m < 1 or m & (m - 1) or m > n // 2:
        raise ValueError(f"hosts per switch M must be a power of two <= N/2 = {n // 2}, got {m}")
    half = n // 2
    out = []
    for r in range(m * n):
        low, slot = r % n, r // n
        a = low >> 1
        if bin(r).count("1") % 2 == 0:
            switch = (a + slot) % half  # upper group
        else:
            switch = half + a % half  # lower group
        out.append(switch * m + slot)
    return out


def bigraph_route(n: int) -> Route:
    """Directed links of the path between two BiGraph switches: none on one switch, the direct
    link across groups, and within a group via the other group's switch with the destination's
    index (one fixed path of the N/2 equal-cost ones, spreading destinations apart)."""
    half = n // 2

    def route(src: int, dst: int) -> list[tuple[int, int]]:
        if src == dst:
            return []
        if (src < half) != (dst < half):
            return [(src, dst)]
        via = dst % half + (half if src < half else 0)
        return [(src, via), (via, dst)]

    return route


def link_loads(flows: Sequence[tuple[int, int]], route: Route) -> Counter:
    """Flows per directed link for (src switch, dst switch) flows."""
    loads: Counter = Counter()
    for src, dst in flows:
        loads.update(route(src, dst))
    return loads


def max_link_flows(flows: Sequence[tuple[int, int]], route: Route) -> int:
    return max(link_loads(flows, route).values(), default=0)


def step_switch_flows(schedule: Schedule, rank_host: Sequence[int],
                      switch_of: Callable[[int], int]) -> list[list[tuple[int, int]]]:
    """Per step, the (src switch, dst switch) of every flow under a rank -> host placement."""
    return [[(switch_of(rank_host[f.src]), switch_of(rank_host[f.dst])) for f in step.flows]
            for step in schedule.steps]


def conflicts_per_step(schedule: Schedule, rank_host: Sequence[int],
                       switch_of: Callable[[int], int], route: Route) -> list[int]:
    """Max flows on any switch-to-switch link, per step."""
    return [max_link_flows(fl, route) for fl in step_switch_flows(schedule, rank_host, switch_of)]


def fluid_time(schedule: Schedule, rank_host: Sequence[int], switch_of: Callable[[int], int],
               route: Route) -> float:
    """Schedule time in units of size / line rate if every link shares its rate equally: each
    step lasts as long as its most loaded link (host links included) needs."""
    total = 0.0
    for step in schedule.steps:
        load: Counter = Counter()
        for f in step.flows:
            s, d = rank_host[f.src], rank_host[f.dst]
            load[("up", s)] += f.bytes
            load[("down", d)] += f.bytes
            for link in route(switch_of(s), switch_of(d)):
                load[link] += f.bytes
        total += max(load.values()) / schedule.size
    return total


ORDERS = ("naive", "topology", "remap")


def rank_order(cluster: Cluster, order: str, spec: FabricSpec | None = None) -> list[Gpu]:
    gpus = cluster.gpus()
    if order == "naive":
        return gpus
    if order == "topology":
        groups: dict[object, list[str]] = {}
        for s in cluster.servers:
            key = s.group if s.group is not None else s.name
            groups.setdefault(key, []).extend(g.nic for g in s.gpus)
        by_nic = {g.nic: g for g in gpus}
        ordered = topology_aware_ring([g.nic for g in gpus], list(groups.values()))
        return [by_nic[n] for n in ordered]
    if order == "remap":
        if spec is None or spec.kind != "bigraph":
            raise ValueError("rank order 'remap' (EFLOPS HDRM) needs a BiGraph fabric")
        if cluster.gpus_per_server != 1:
            raise ValueError("rank order 'remap' needs BiGraph with one NIC per server")
        switches = len(spec.switches)
        per_switch = int(spec.params.get("hosts_per_switch", len(gpus) // switches))
        return [gpus[i] for i in hdrm_map(per_switch, switches)]
    raise ValueError(f"unknown rank order {order!r} (one of {', '.join(ORDERS)})")
