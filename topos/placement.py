"""Which server runs which node when a fabric is spread over several machines.

Links between nodes on the same server are veth pairs; every link between two servers becomes a
tunnel (an ssh or GRE tunnel, see `topos/mininet/cluster.py`), slower and costlier than a veth.
So the default placement follows the fabric:

- **fabric** (default): whole units of the fabric per server. A unit is every switch sharing a
  rail, a segment/group, or a plane; or, for fabrics without such labels (leaf-spine), a
  contiguous slice of the lowest tier. Units go to servers in order, balanced by node count;
  switches without the unit's label (aggregation, spine and superspine switches shared by all
  units) then go, tier by tier, to the server holding most of their neighbours, the less loaded
  one on a tie. Each NIC sits with the switch(es) it is attached to. Every kind of unit the
  fabric has is tried; the one with the fewest crossing links wins (rails, then segments, then
  planes on a tie).
- **switch**: switch by switch, as Mininet's `SwitchBinPlacer`: the switches in model order cut
  into evenly sized bins, one per server, each NIC with its switch. Simple and balanced, but
  blind to the structure, so more links cross.

Plain data only: `fabric-lab show --servers` prints a placement without Mininet.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

from topos.errors import FabricLabError
from topos.model import FabricSpec, Link, Switch

POLICIES = ("fabric", "switch")
LOCALHOST = "localhost"
UNIT_KEYS = ("rail", "group", "plane")  # tie-break order: rails, then segments, then planes
UNIT_WORDS = {"rail": "whole rails", "group": "whole segments/groups", "plane": "whole planes",
              "tier": "slices of the lowest tier"}


class PlacementError(FabricLabError, ValueError):
    """A bad server list or placement policy."""


def parse_servers(text: str | list[str]) -> list[str]:
    """`localhost,10.0.0.2,...` -> server names; empty names and repeats are errors."""
    names = [s.strip() for s in text.split(",")] if isinstance(text, str) else list(text)
    problems = []
    if not names or any(not n for n in names):
        problems.append("empty server name")
    repeated = sorted(n for n, c in Counter(names).items() if n and c > 1)
    if repeated:
        problems.append(f"server(s) named twice: {', '.join(repeated)}")
    if problems:
        raise PlacementError(f"--servers {','.join(names)!r}: " + "; ".join(problems))
    return names


@dataclass
class Placement:
    """Node (switch or NIC) -> server, and how it was chosen."""

    servers: list[str]
    where: dict[str, str]
    policy: str
    unit: str = ""  # what the fabric policy kept together ("rail", "group", "plane", "tier")
    notes: list[str] = field(default_factory=list)

    def server_of(self, node: str) -> str:
        return self.where[node]

    def nodes_on(self, server: str) -> list[str]:
        return [n for n, s in self.where.items() if s == server]

    def crossing(self, spec: FabricSpec) -> list[Link]:
        """Links whose two ends are on different servers (tunnels)."""
        return [ln for ln in spec.links if self.where[ln.a.node] != self.where[ln.b.node]]

    def is_split(self) -> bool:
        return len(set(self.where.values())) > 1

    def describe(self, spec: FabricSpec) -> str:
        """What `fabric-lab show --servers` prints: nodes per server and the crossing links."""
        crossing = self.crossing(spec)
        how = self.policy + (f", {UNIT_WORDS[self.unit]} per server" if self.unit else "")
        lines = [f"placement over {len(self.servers)} server(s) ({how}): "
                 f"{len(crossing)} of {len(spec.links)} links cross servers"]
        for server in self.servers:
            switches = [s.name for s in spec.switches if self.where[s.name] == server]
            nics = [n.name for n in spec.host_nics() if self.where[n.name] == server]
            lines.append(f"  {server}: {len(switches)} switches, {len(nics)} NICs")
            lines.append(f"    switches: {' '.join(switches) or '-'}")
            lines.append(f"    NICs:     {' '.join(nics) or '-'}")
        order = self.servers.index
        per_pair = Counter(tuple(sorted((self.where[ln.a.node], self.where[ln.b.node]), key=order))
                           for ln in crossing)
        for (a, b), count in sorted(per_pair.items(), key=lambda kv: tuple(map(order, kv[0]))):
            lines.append(f"  {a} <-> {b}: {count} tunnel(s)")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def place(spec: FabricSpec, servers: list[str], policy: str = "fabric") -> Placement:
    """Place every switch and NIC of `spec` on one of `servers` (see the module doc)."""
    servers = parse_servers(servers)
    if policy not in POLICIES:
        raise PlacementError(f"unknown placement {policy!r}; choose {', '.join(POLICIES)}")
    if len(servers) == 1:
        return Placement(servers, {n: servers[0] for n in _all_nodes(spec)}, policy)
    if policy == "switch":
        placement = _by_switch(spec, servers)
    else:
        candidates = [_by_unit(spec, servers, key) for key in (*UNIT_KEYS, "tier")]
        found = [c for c in candidates if c is not None]
        placement = min(found, key=lambda p: (len(p.crossing(spec)), _imbalance(spec, p)))
    idle = [s for s in servers if not placement.nodes_on(s)]
    if idle:
        placement.notes.append(f"nothing placed on {', '.join(idle)}: the fabric has fewer "
                               f"units than servers")
    return placement


def _all_nodes(spec: FabricSpec) -> list[str]:
    return [s.name for s in spec.switches] + [n.name for n in spec.host_nics()]


def _imbalance(spec: FabricSpec, placement: Placement) -> int:
    load = Counter(placement.where[s.name] for s in spec.switches)
    return max(load.values()) - min(load.get(s, 0) for s in placement.servers)


_Item = TypeVar("_Item")


def _bins(items: list[_Item], weights: dict[_Item, int], servers: list[str]) -> dict[_Item, str]:
    """Cut `items` (in order) into contiguous runs of about equal weight, one per server."""
    total = sum(weights[i] for i in items)
    out: dict[_Item, str] = {}
    done = 0
    for item in items:
        index = min(int((done + weights[item] / 2) * len(servers) / total), len(servers) - 1)
        out[item] = servers[index]
        done += weights[item]
    return out


def _by_switch(spec: FabricSpec, servers: list[str]) -> Placement:
    names = [s.name for s in spec.switches]
    where = _bins(names, dict.fromkeys(names, 1), servers)
    _place_nics(spec, where)
    return Placement(servers, where, "switch")


def _unit_of(switch: Switch, key: str, lowest: int) -> object | None:
    if key == "tier":
        return switch.name if switch.tier == lowest else None
    return getattr(switch, key)


def _by_unit(spec: FabricSpec, servers: list[str], key: str) -> Placement | None:
    """Whole units (switches sharing `key`) per server; None when there are too few units."""
    lowest = min(s.tier for s in spec.switches)
    units: dict[object, list[str]] = {}
    for sw in spec.switches:
        unit = _unit_of(sw, key, lowest)
        if unit is not None:
            units.setdefault(unit, []).append(sw.name)
    if len(units) < len(servers):
        return None
    attached = Counter(att for nic in spec.host_nics() for att, _ in spec.attachments(nic.name))
    weights = {u: sum(1 + attached[n] for n in members) for u, members in units.items()}
    order = sorted(units, key=str) if key != "tier" else list(units)
    unit_server = _bins(order, weights, servers)
    where = {n: unit_server[u] for u, members in units.items() for n in members}
    load = Counter(where.values())
    floaters = sorted((s for s in spec.switches if s.name not in where), key=lambda s: s.tier)
    for sw in floaters:
        near = Counter(where[nb] for nb in spec.neighbours(sw.name) if nb in where)
        best = min(servers, key=lambda s: (-near[s], load[s], servers.index(s)))
        where[sw.name] = best
        load[best] += 1
    _place_nics(spec, where)
    return Placement(servers, where, "fabric", unit=key)


def _place_nics(spec: FabricSpec, where: dict[str, str]) -> None:
    """Each NIC on the server of most of its switches (the first one's on a tie)."""
    for nic in spec.host_nics():
        switches = [sw for sw, _ in spec.attachments(nic.name)]
        votes = Counter(where[sw] for sw in switches)
        top = max(votes.values())
        where[nic.name] = next(where[sw] for sw in switches if votes[where[sw]] == top)


def balance_ratio(spec: FabricSpec, placement: Placement) -> float:
    """Most switches on one server over the even share (1.0 = perfectly even)."""
    load = Counter(placement.where[s.name] for s in spec.switches)
    return max(load.values()) / math.ceil(len(spec.switches) / len(placement.servers))
