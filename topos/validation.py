"""Checks on a FabricSpec. `validate()` collects every problem and raises one error listing them."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable

from topos.errors import InputError
from topos.model import CPU_PORT, DROP_PORT, FabricSpec
from topos.values import (
    DELAY_MS,
    IFNAMSIZ,
    MTU,
    QUEUE_PKTS,
    RATE_MBPS,
    TCP_PORT,
    fault_message,
    name_problem,
)

_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


class FabricError(InputError):
    """A fabric (a model, a fabric file, a builder's scale) failed validation; `problems` lists
    every problem found, the message the first few (`topos.values.fault_message`)."""

    def __init__(self, fabric: str, problems: list[str], source: str | None = None):
        self.fabric = fabric
        self.problems = problems
        super().__init__(fault_message(source or f"fabric {fabric!r}", problems))


def _duplicates(what: str, values: Iterable[object]) -> list[str]:
    counts = Counter(v for v in values if v not in (None, ""))
    return [f"duplicate {what} {value!r} (used {n} times)" for value, n in counts.items() if n > 1]


def _check_names(spec: FabricSpec) -> list[str]:
    problems = [f"fabric name {p}" for p in [name_problem(spec.name)] if p]
    for what, named in (("switch", spec.switches), ("host", spec.hosts),
                        ("NIC", spec.host_nics())):
        problems += [f"{what} name {p}" for p in map(name_problem, (n.name for n in named)) if p]
    names = [sw.name for sw in spec.switches] + [nic.name for nic in spec.host_nics()]
    problems += _duplicates("node name", names)
    problems += _duplicates("host name", [h.name for h in spec.hosts])
    problems += [f"host {h.name!r} has no NIC" for h in spec.hosts if not h.nics]
    return problems


def _check_switches(spec: FabricSpec) -> list[str]:
    problems = _duplicates("switch device id", [sw.device_id for sw in spec.switches])
    problems += _duplicates("gRPC port", [sw.grpc_port for sw in spec.switches])
    problems += _duplicates("runtime CLI port", [sw.thrift_port for sw in spec.switches])
    for sw in spec.switches:
        if sw.device_id < 1:
            problems.append(f"switch {sw.name!r} has device id {sw.device_id} (must be >= 1)")
        if sw.tier < 1:
            problems.append(f"switch {sw.name!r} has tier {sw.tier} (must be >= 1)")
        for what, port in (("grpc_port", sw.grpc_port), ("thrift_port", sw.thrift_port)):
            fault = TCP_PORT.problem(port)
            if fault:
                problems.append(f"switch {sw.name!r}: {what} {fault}")
        if sw.cpu_port in (0, DROP_PORT):
            problems.append(f"switch {sw.name!r} has CPU port {sw.cpu_port} (must be > 0 "
                            f"and not the drop port {DROP_PORT})")
    return problems


def _check_nics(spec: FabricSpec) -> list[str]:
    nics = spec.host_nics()
    problems = _duplicates("IPv4 address", [nic.ip for nic in nics])
    problems += _duplicates("NIC MAC", [nic.mac for nic in nics])
    for nic in nics:
        try:
            ipaddress.IPv4Address(nic.ip)
        except ValueError:
            problems.append(f"NIC {nic.name!r} has an invalid IPv4 address {nic.ip!r}")
        if not _MAC.match(nic.mac):
            problems.append(f"NIC {nic.name!r} has an invalid MAC {nic.mac!r}")
    attached = {end.node for ln in spec.links for end in (ln.a, ln.b)}
    problems += [f"NIC {nic.name!r} is not connected to anything"
                 for nic in nics if nic.name not in attached]
    return problems


def _check_links(spec: FabricSpec) -> list[str]:
    switches = {sw.name for sw in spec.switches}
    nics = {nic.name for nic in spec.host_nics()}
    problems: list[str] = []
    for ln in spec.links:
        label = f"link {ln.a.node}:{ln.a.port} <-> {ln.b.node}:{ln.b.port}"
        for end in (ln.a, ln.b):
            if end.node not in switches and end.node not in nics:
                problems.append(f"{label} is dangling: no switch or NIC named {end.node!r}")
            elif end.node in switches and not (0 < end.port < CPU_PORT):
                problems.append(f"{label}: switch port {end.port} out of range 1..{CPU_PORT - 1}")
            elif end.node in nics and end.port < 0:
                problems.append(f"{label}: NIC port {end.port} is negative")
            if len(end.intf) > IFNAMSIZ:
                problems.append(f"interface name {end.intf!r} is {len(end.intf)} characters "
                                f"(Linux allows {IFNAMSIZ})")
            else:
                fault = name_problem(end.intf, IFNAMSIZ)
                if fault:
                    problems.append(f"interface name {fault}")
            if end.node in switches and end.mac and not _MAC.match(end.mac):
                problems.append(f"{label}: invalid MAC {end.mac!r} on {end.intf}")
        if ln.a.node == ln.b.node:
            problems.append(f"{label} connects {ln.a.node!r} to itself")
        for what, value, number in (("rate_mbps", ln.rate_mbps, RATE_MBPS),
                                     ("delay_ms", ln.delay_ms, DELAY_MS),
                                     ("queue_pkts", ln.queue_pkts, QUEUE_PKTS),
                                     ("mtu", ln.mtu, MTU)):
            fault = None if value is None else number.problem(value)
            if fault:
                problems.append(f"{label}: {what} {fault}")
    ends = [end for ln in spec.links for end in (ln.a, ln.b)]
    for (node, port), n in Counter((e.node, e.port) for e in ends).items():
        if n > 1:
            problems.append(f"port clash: {node} port {port} is used by {n} links")
    problems += _duplicates("interface name", [e.intf for e in ends])
    problems += _duplicates("switch port MAC", [e.mac for e in ends if e.node in switches])
    return problems


def problems(spec: FabricSpec) -> list[str]:
    """Every problem found in `spec` (empty when it is sound)."""
    return (_check_names(spec) + _check_switches(spec) + _check_nics(spec)
            + _check_links(spec))


def validate(spec: FabricSpec) -> FabricSpec:
    """Return `spec` unchanged if it is sound; otherwise raise FabricError listing every problem."""
    found = problems(spec)
    if found:
        raise FabricError(spec.name, found)
    return spec
