"""Hosts the traffic tools run on: anything that can start a process in its network namespace.

A `Host` has a name, an IPv4 address, an interface and `popen(argv)`. `NetnsHost` wraps a
named namespace (`ip netns exec`), `MininetHost` a Mininet node (its own `popen`), and
`PidHost` any process's namespace (`nsenter --net`), which is how a Mininet host is reached
from another process. What they start ends with the process that started it, also when that
one is killed (`topos.mininet.procs.spawn`; `ip netns exec` and `nsenter --net` exec the command
in place, so the parent-death signal reaches it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from topos.errors import FabricLabError
from topos.mininet.procs import spawn

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class Host(Protocol):
    name: str
    ip: str
    iface: str

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen: ...


def python_argv(module: str, *args: str) -> list[str]:
    """argv that runs `python -m module args` with this interpreter and this checkout."""
    return [sys.executable, "-m", module, *args]


def _env() -> dict[str, str]:
    """This environment, with this checkout importable (the project may not be installed)."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = f"{PROJECT_ROOT}{':' + path if path else ''}"
    return env


@dataclass
class NetnsHost:
    name: str
    netns: str
    ip: str
    iface: str
    mac: str = ""

    def argv(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        kwargs.setdefault("env", _env())
        kwargs.setdefault("cwd", PROJECT_ROOT)
        return spawn(self.argv(argv), **kwargs)

    def run(self, argv: list[str], check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), check=check, capture_output=True, text=True,
                              **kwargs)


@dataclass
class PidHost:
    """The network namespace of a running process (e.g. a Mininet host's shell)."""

    name: str
    pid: int
    ip: str
    iface: str

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        kwargs.setdefault("env", _env())
        kwargs.setdefault("cwd", PROJECT_ROOT)
        return spawn(["nsenter", f"--net=/proc/{self.pid}/ns/net", *argv], **kwargs)


class MininetHost:
    """Adapter for a Mininet host node (`net.get("h1")`)."""

    def __init__(self, node: Any, iface: str | None = None) -> None:
        self.node = node
        self.name = node.name
        self.iface = iface or node.defaultIntf().name
        self.ip = node.IP(self.iface)

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        kwargs.setdefault("env", _env())
        kwargs.setdefault("cwd", str(PROJECT_ROOT))
        return self.node.popen(argv, **kwargs)


class HostSpecError(FabricLabError, ValueError):
    pass


def _first_ipv4(argv_prefix: list[str], iface: str | None) -> tuple[str, str]:
    """(interface, IPv4) inside a namespace: `iface`'s address, or the first non-loopback one."""
    proc = subprocess.run([*argv_prefix, "ip", "-j", "-4", "addr", "show"],
                          capture_output=True, text=True)
    if proc.returncode:
        raise HostSpecError(proc.stderr.strip() or "cannot list addresses")
    for link in json.loads(proc.stdout or "[]"):
        name = link.get("ifname")
        if name == "lo" or (iface and name != iface):
            continue
        for addr in link.get("addr_info", []):
            if addr.get("family") == "inet":
                return name, addr["local"]
    raise HostSpecError(f"no IPv4 address on {iface or 'any interface'}")


def host_from_spec(spec: str) -> Host:
    """NAME=netns:NSNAME[:IFACE] or NAME=pid:PID[:IFACE] (address looked up inside)."""
    name, sep, where = spec.partition("=")
    kind, _, rest = where.partition(":")
    target, _, iface = rest.partition(":")
    if not sep or not name or kind not in ("netns", "pid") or not target:
        raise HostSpecError(f"bad host {spec!r}: use NAME=netns:NS[:IFACE] or NAME=pid:PID[:IFACE]")
    try:
        if kind == "netns":
            if not Path("/run/netns", target).exists():
                raise HostSpecError(f"unknown host {name!r}: no network namespace {target!r}")
            found_if, ip = _first_ipv4(["ip", "netns", "exec", target], iface or None)
            return NetnsHost(name, target, ip, found_if)
        if not target.isdigit() or not Path("/proc", target, "ns", "net").exists():
            raise HostSpecError(f"unknown host {name!r}: no process {target!r}")
        found_if, ip = _first_ipv4(["nsenter", f"--net=/proc/{target}/ns/net"], iface or None)
        return PidHost(name, int(target), ip, found_if)
    except HostSpecError as e:
        if str(e).startswith(("unknown host", "bad host")):
            raise
        raise HostSpecError(f"host {name!r}: {e}") from None
