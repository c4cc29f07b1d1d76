"""Standalone test networks of namespaces and veth pairs (tests, benchmarks, demos).

Everything is created under one name prefix and removed by `Testbed.close()` (also when
building fails half way), so a crashed run leaves nothing behind that the next `close` of the
same prefix would not remove.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

from topos.errors import FabricLabError
from topos.model import Endpoint, FabricSpec, Host, Link, Nic
from traffic.hosts import NetnsHost


class TestbedError(FabricLabError, RuntimeError):
    pass


def _ip(*args: str, netns: str | None = None) -> str:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode:
        raise TestbedError(f"{' '.join(argv)}: {proc.stderr.strip()}")
    return proc.stdout


def existing_netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


@dataclass
class Testbed:
    """Namespaces named `<prefix><name>`; hosts and plain namespaces (relays) alike."""

    prefix: str
    namespaces: list[str] = field(default_factory=list)
    hosts: dict[str, NetnsHost] = field(default_factory=dict)
    links: list[tuple[str, str, str, str, int]] = field(default_factory=list)  # ns, if, ns, if, mtu

    def add_netns(self, name: str) -> str:
        ns = f"{self.prefix}{name}"
        if ns in existing_netns():
            raise TestbedError(f"namespace {ns} already exists (left over? `ip netns del {ns}`)")
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("link", "set", "lo", "up", netns=ns)
        # IPv4 only, as in the lab's fabrics: no IPv6 neighbour discovery or MLD chatter.
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"], capture_output=True, check=True)
        return ns

    def link(self, ns_a: str, if_a: str, ns_b: str, if_b: str, mtu: int = 1500) -> None:
        """A veth pair between two of this testbed's namespaces, both ends up."""
        _ip("link", "add", "name", if_a, "netns", ns_a, "mtu", str(mtu), "type", "veth",
            "peer", "name", if_b, "netns", ns_b, "mtu", str(mtu))
        _ip("link", "set", if_a, "up", netns=ns_a)
        _ip("link", "set", if_b, "up", netns=ns_b)
        self.links.append((ns_a, if_a, ns_b, if_b, mtu))

    def address(self, ns: str, iface: str, cidr: str) -> None:
        _ip("addr", "add", cidr, "dev", iface, netns=ns)

    def add_host(self, name: str, ns: str, iface: str, cidr: str) -> NetnsHost:
        self.address(ns, iface, cidr)
        mac = _ip("-br", "link", "show", iface, netns=ns).split()[2]
        host = NetnsHost(name=name, netns=ns, ip=cidr.split("/")[0], iface=iface, mac=mac)
        self.hosts[name] = host
        return host

    def spec(self, name: str, rate_mbps: float | None = None) -> FabricSpec:
        """The testbed as a fabric model: one host of one NIC (named as the host) per host,
        its links at `rate_mbps` (what senders pace to; the veths themselves are unshaped)."""
        by_iface = {(h.netns, h.iface): h for h in self.hosts.values()}
        links = []
        for ns_a, if_a, ns_b, if_b, mtu in self.links:
            ends = []
            for ns, iface in ((ns_a, if_a), (ns_b, if_b)):
                h = by_iface.get((ns, iface))
                ends.append(Endpoint(h.name if h else ns, 0, iface, h.mac if h else ""))
            links.append(Link(ends[0], ends[1], rate_mbps=rate_mbps, mtu=mtu))
        hosts = [Host(h.name, [Nic(h.name, h.ip, h.mac)]) for h in self.hosts.values()]
        return FabricSpec(name, "testbed", hosts=hosts, links=links)

    def close(self) -> None:
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.namespaces.clear()

    def __enter__(self) -> Testbed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pair(prefix: str, subnet: str = "10.77.0") -> Testbed:
    """Two hosts `a` (.1) and `b` (.2) on one veth link."""
    tb = Testbed(prefix)
    try:
        a, b = tb.add_netns("a"), tb.add_netns("b")
        tb.link(a, f"{prefix}a0", b, f"{prefix}b0")
        tb.add_host("a", a, f"{prefix}a0", f"{subnet}.1/24")
        tb.add_host("b", b, f"{prefix}b0", f"{subnet}.2/24")
    except BaseException:
        tb.close()
        raise
    return tb


def relayed_pair(prefix: str, subnet: str = "10.78.0") -> Testbed:
    """Hosts `a` and `b` whose link runs through namespace `m` (interfaces m0 towards a,
    m1 towards b) where an impairment relay can sit."""
    tb = Testbed(prefix)
    try:
        a, m, b = tb.add_netns("a"), tb.add_netns("m"), tb.add_netns("b")
        tb.link(a, f"{prefix}a0", m, f"{prefix}m0")
        tb.link(m, f"{prefix}m1", b, f"{prefix}b0")
        tb.add_host("a", a, f"{prefix}a0", f"{subnet}.1/24")
        tb.add_host("b", b, f"{prefix}b0", f"{subnet}.2/24")
        # The relay forwards raw frames: give each host the other's MAC statically.
        ha, hb = tb.hosts["a"], tb.hosts["b"]
        _ip("neigh", "replace", hb.ip, "lladdr", hb.mac, "dev", ha.iface, "nud", "permanent",
            netns=a)
        _ip("neigh", "replace", ha.ip, "lladdr", ha.mac, "dev", hb.iface, "nud", "permanent",
            netns=b)
    except BaseException:
        tb.close()
        raise
    return tb


def star(prefix: str, n: int, subnet: str = "10.79.0", mtu: int = 1500) -> Testbed:
    """`n` hosts h0..h{n-1} on a Linux bridge in namespace `sw` (the bridge is the switch)."""
    tb = Testbed(prefix)
    try:
        sw = tb.add_netns("sw")
        _ip("link", "add", "name", f"{prefix}br", "type", "bridge", netns=sw)
        _ip("link", "set", f"{prefix}br", "up", netns=sw)
        for i in range(n):
            ns = tb.add_netns(f"h{i}")
            tb.link(ns, f"{prefix}h{i}", sw, f"{prefix}p{i}", mtu)
            _ip("link", "set", f"{prefix}p{i}", "master", f"{prefix}br", netns=sw)
            tb.add_host(f"h{i}", ns, f"{prefix}h{i}", f"{subnet}.{i + 1}/24")
        hosts = list(tb.hosts.values())
        for h in hosts:  # static neighbours, as Mininet fabrics install
            for other in hosts:
                if other is not h:
                    _ip("neigh", "replace", other.ip, "lladdr", other.mac, "dev", h.iface,
                        "nud", "permanent", netns=h.netns)
    except BaseException:
        tb.close()
        raise
    return tb
