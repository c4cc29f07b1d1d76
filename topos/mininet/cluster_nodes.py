"""Nodes and links of a fabric spread over several servers, on Mininet Cluster Edition.

`RemoteP4Switch` and `RemoteFabricHost` are the lab's switch and NIC nodes with Mininet's
`RemoteMixin` (`mininet.examples.cluster`): their shells run on their server through ssh (and
`mnexec` there), so every `cmd()` and interface operation Mininet does happens on the right
machine. What the lab adds:

- the switch process runs on its server through the shared ssh connection, listening for
  P4Runtime on the server's address and for the runtime CLI on its plan port + `THRIFT_SHIFT`
  (the controller's machine forwards the plan ports to both, see `cluster.py`);
- `popen()` in a remote NIC is a `RemotePopen`, so signals reach the process, not just ssh;
- links between servers: `SshTunnelLink` is Mininet's `RemoteSSHLink` (an Ethernet tunnel of
  `ssh -w`) with one tap unit per link end instead of its fixed `tap9`, so several tunnels
  can be built (and both ends can live in one kernel, as in the lab's tests);
  `GreTunnelLink` is Mininet's `RemoteGRELink` (kernel gretap, faster, needs `ip_gre`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import subprocess
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mininet.examples.cluster import RemoteGRELink, RemoteMixin, RemoteSSHLink

from topos.mininet.cluster_servers import ClusterError, LocalServer, RemotePopen, SshServer
from topos.mininet.nodes import OFFLOADS, FabricHost, P4Switch, SwitchStartError, grpc_listening

if TYPE_CHECKING:
    from topos.mininet.cluster import Servers

THRIFT_SHIFT = 10000  # runtime CLI port on the switch's own server: plan port + this
_units = itertools.count(100 + (os.getpid() % 1000) * 1000)  # tap units, unique per run


def with_option(argv: list[str], option: str, value: str) -> list[str]:
    """`argv` with the value after `option` replaced."""
    out = list(argv)
    out[out.index(option) + 1] = value
    return out


class RemoteP4Switch(RemoteMixin, P4Switch):
    """A P4 switch node on another server: ports, process and readiness probe over there."""

    def __init__(self, name: str, *, cluster_server: SshServer, **params: Any):
        self.cluster_server = cluster_server
        super().__init__(name, **params)

    def prepare_ports(self) -> None:
        steps = []
        for intf in self.p4_ports.values():
            steps += [["ip", "link", "set", "dev", intf, "up"],
                      ["sysctl", "-q", "-w", f"net.ipv6.conf.{intf}.disable_ipv6=1"],
                      ["ethtool", "-K", intf, *OFFLOADS]]
        script = " && ".join(shlex.join(step) for step in steps)
        try:
            self.cluster_server.run(["sh", "-c", script])
        except ClusterError as err:
            raise SwitchStartError(f"{self.name}: preparing ports: {err}") from None

    def start(self, controllers: Sequence[Any] = ()) -> None:
        self.prepare_ports()
        if self.target is None:
            return
        if grpc_listening(self.model.grpc_port, self.serverIP):
            raise SwitchStartError(f"{self.name}: something already listens on "
                                   f"{self.serverIP}:{self.model.grpc_port}")
        argv = self.target.argv(self.model, self.p4_ports, pcap_dir=self.pcap_dir,
                                log_console=self.log_console)
        argv = with_option(argv, "--grpc-server-addr", f"{self.serverIP}:{self.model.grpc_port}")
        self.argv = with_option(argv, "--thrift-port", str(self.model.thrift_port + THRIFT_SHIFT))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            # a terminal: if this run is killed hard, its ssh client dying hangs the switch up
            self.proc = self.cluster_server.popen(self.argv, stdin=subprocess.DEVNULL,
                                                  stdout=log, stderr=subprocess.STDOUT, tty=True)
        if self.on_start:
            self.on_start(self.proc.pid)

    def wait_ready(self, deadline: float) -> None:
        if self.proc is None:
            return
        where = f"{self.serverIP}:{self.model.grpc_port}"
        while not grpc_listening(self.model.grpc_port, self.serverIP):
            if self.proc.poll() is not None:
                raise SwitchStartError(f"{self.name}: {self.argv[0]} on {self.server} exited "
                                       f"with status {self.proc.returncode} before listening "
                                       f"on {where}\n{self._log_tail()}")
            if time.monotonic() > deadline:
                raise SwitchStartError(f"{self.name}: {where} not listening after "
                                       f"{self.ready_timeout:g} s\n{self._log_tail()}")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.02)

    def stop_target(self) -> int | None:
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        assert isinstance(proc, RemotePopen)
        return proc.stop(self.stop_timeout)


class RemoteFabricHost(RemoteMixin, FabricHost):
    """A NIC namespace on another server; `popen` runs there and takes signals."""

    def __init__(self, name: str, *, cluster_server: SshServer, **params: Any):
        self.cluster_server = cluster_server
        super().__init__(name, **params)

    def popen(self, *args: Any, **kwargs: Any) -> RemotePopen:
        kwargs.pop("mncmd", None)
        if kwargs.pop("shell", False):
            raise ValueError(f"{self.name}: popen(shell=True) is not supported on other servers")
        argv = list(args[0]) if len(args) == 1 and not isinstance(args[0], str) else (
            args[0].split() if len(args) == 1 else list(args))
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        return self.cluster_server.popen(["mnexec", "-a", str(self.pid), *argv], **kwargs)


def _rename(node: Any, tap: str, name: str, addr: str | None) -> None:
    out = node.cmd(f"ip link set {tap} name {name}" + (f" address {addr}" if addr else ""))
    if out.strip():
        raise ClusterError(f"{node.name}: renaming {tap} to {name}: {out.strip()}")


class SshTunnelLink(RemoteSSHLink):
    """Mininet's ssh Ethernet tunnel, with a fresh tap unit for each end."""

    def __init__(self, node1: Any, node2: Any, *, servers: Servers, **kwargs: Any):
        self.servers = servers
        super().__init__(node1, node2, **kwargs)

    def makeTunnel(self, node1: Any, node2: Any, intfname1: str, intfname2: str,
                   addr1: str | None = None, addr2: str | None = None) -> subprocess.Popen:
        if isinstance(self.servers.of(node2), LocalServer):  # ssh from the local end
            node1, node2, intfname1, intfname2, addr1, addr2 = (
                node2, node1, intfname2, intfname1, addr2, addr1)
        s1, s2 = self.servers.of(node1), self.servers.of(node2)
        assert isinstance(s2, SshServer)
        units = next(_units), next(_units)
        for server, unit in zip((s1, s2), units, strict=True):
            server.run(["ip", "tuntap", "add", "dev", f"tap{unit}", "mode", "tap"])
        opts = s2.ssh_options() if s1.local else ["-o", "BatchMode=yes"]
        argv = ["ssh", *opts, "-n", "-o", "Tunnel=ethernet", "-o", "ExitOnForwardFailure=yes",
                "-w", f"{units[0]}:{units[1]}",
                "-o", "ControlPath=none", "-o", "ServerAliveInterval=5", s2.dest, "echo @"]
        self.cmd = argv
        tunnel = s1.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True)
        assert tunnel.stdout is not None and tunnel.stderr is not None  # both are pipes
        if tunnel.stdout.read(1) != b"@":
            tunnel.wait()
            err = tunnel.stderr.read().decode(errors="replace").strip()
            for server, unit in zip((s1, s2), units, strict=True):
                server.run(["ip", "link", "del", f"tap{unit}"], check=False)
            if "Tunnel forwarding failed" in err:
                raise ClusterError(f"sshd on {s2.name} lacks `PermitTunnel yes`: the tunnel "
                                   f"{s1.name}:{intfname1} <-> {s2.name}:{intfname2} cannot be "
                                   f"opened (set it in its sshd_config; docs/cluster.md)")
            raise ClusterError(f"tunnel {s1.name}:{intfname1} <-> {s2.name}:{intfname2} "
                               f"failed: {err} (sshd needs PermitTunnel yes)")
        for node, server, unit, name, addr in ((node1, s1, units[0], intfname1, addr1),
                                               (node2, s2, units[1], intfname2, addr2)):
            if node.inNamespace:
                server.run(["ip", "link", "set", f"tap{unit}", "netns", str(node.pid)])
            _rename(node, f"tap{unit}", name, addr)
        return tunnel

    def stop(self) -> None:
        tunnel = self.tunnel
        super().stop()
        if isinstance(tunnel, subprocess.Popen):
            with contextlib.suppress(subprocess.TimeoutExpired):
                tunnel.wait(5)
            if tunnel.poll() is None:
                tunnel.kill()
                tunnel.wait()
            for stream in (tunnel.stdout, tunnel.stderr):
                if stream:
                    stream.close()


class GreTunnelLink(RemoteGRELink):
    """Mininet's gretap tunnel between servers (kernel `ip_gre` on both), run through the
    lab's server connections so the local end needs no remote shell."""

    def __init__(self, node1: Any, node2: Any, *, servers: Servers, **kwargs: Any):
        self.servers = servers
        super().__init__(node1, node2, **kwargs)

    def makeTunnel(self, node1: Any, node2: Any, intfname1: str, intfname2: str,
                   addr1: str | None = None, addr2: str | None = None) -> None:
        s1, s2 = self.servers.of(node1), self.servers.of(node2)
        ip1, ip2 = self.servers.route_source(s2.ip) if s1.local else s1.ip, s2.ip
        if s2.local:
            ip2 = self.servers.route_source(s1.ip)
        type(self).GRE_KEY += 1
        for node, server, name, addr, local, remote in (
                (node1, s1, intfname1, addr1, ip1, ip2), (node2, s2, intfname2, addr2, ip2, ip1)):
            server.run(["ip", "link", "add", "name", name, "type", "gretap", "local", local,
                        "remote", remote, "ttl", "64", "key", str(self.GRE_KEY)])
            if addr:
                server.run(["ip", "link", "set", name, "address", addr])
            server.run(["ip", "link", "set", "dev", name, "up", "mtu", "1450"])
            if node.inNamespace:
                server.run(["ip", "link", "set", name, "netns", str(node.pid)])
