"""Which host each rank runs on, and what that placement does to the network.

- `naive`: rank i on the i-th host as given.
- `topology_aware_ring`: AIPod's "network topology awareness": ranks ordered group by group,
  so ring neighbours share a switch/group wherever possible.
- `hdrm_map`: EFLOPS' rank remapping for halving-doubling on BiGraph (M hosts per switch,
  N switches, U0..U{N/2-1} then L0..L{N/2-1}; host n on switch n // M). Rank r with low bits
  l = r mod N and slot s = r div N sits in the group given by the parity of r's set bits
  (upper if even) at switch index (l >> 1) + s (upper group) or l >> 1 (lower group), taken
  mod N/2, in slot s. Partners differ in one bit, so they are always in opposite groups (one
  unique, direct link) and the choice of index puts at most one flow on every link per step.
- `link_loads` / `max_link_flows`: flows per directed switch-to-switch link for a list of
  (src switch, dst switch) flows and a routing function.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

from traffic.collectives.schedule import Schedule

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
