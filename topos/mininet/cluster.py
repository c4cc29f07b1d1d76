"""A fabric spread over several servers with Mininet Cluster Edition (`mininet.examples.cluster`).

    opts = ClusterOptions(["localhost", "server2"])
    with ClusterNetwork(spec, P4SWITCH, cluster=opts) as net:
        ...                                   # same API as FabricNetwork

The network is a `MininetCluster`; nodes on this machine are the lab's usual nodes, nodes on
another server are their `RemoteMixin` versions (`cluster_nodes`), placed by `topos.placement`.
Links inside a server are veth pairs; links between servers are ssh Ethernet tunnels (default)
or gretap. Every switch's P4Runtime and runtime-CLI port is forwarded to 127.0.0.1 here over the
server's shared ssh connection, so the controller, the runtime CLI and the experiments reach a
remote switch at the address the fabric model gives, unchanged.

Teardown (any exit path, as FabricNetwork): the processes started on other servers are stopped
(switches included), Mininet takes down tunnels, switches and hosts on every server, a second
sweep on each server waits for its interfaces to go and removes the run's directory there, then
the ssh connections close. `topos.mininet.network.fabric_network(spec, target, cluster=opts)`
picks FabricNetwork or ClusterNetwork from the options (`FabricSession` and the experiments
pass them on explicitly: `cluster=`, `RunContext.cluster`).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mininet.examples.cluster import MininetCluster, RemoteMixin

from targets import Target
from topos.mininet.cluster_checks import CrossLink, LinkEnd, check_links, check_server
from topos.mininet.cluster_nodes import (
    THRIFT_SHIFT,
    GreTunnelLink,
    RemoteFabricHost,
    RemoteP4Switch,
    SshTunnelLink,
)
from topos.mininet.cluster_servers import ClusterError, LocalServer, SshServer
from topos.mininet.network import FabricNetwork, _warn_once, signals_deferred
from topos.mininet.runstate import run_dir
from topos.mininet.shaping import netem_available, tc_batch
from topos.model import FabricSpec, Link
from topos.placement import LOCALHOST, Placement, parse_servers, place

TUNNELS = {"ssh": SshTunnelLink, "gre": GreTunnelLink}


@dataclass(frozen=True)
class ClusterOptions:
    """Where a fabric runs: servers (`localhost` = this machine), placement policy, tunnel
    kind, and an ssh_config file for reaching the servers (default: ssh's own)."""

    servers: tuple[str, ...]
    placement: str = "fabric"
    tunnel: str = "ssh"
    ssh_config: Path | None = None
    user: str = "root"

    def __init__(self, servers: str | list[str] | tuple[str, ...], placement: str = "fabric",
                 tunnel: str = "ssh", ssh_config: Path | None = None, user: str = "root"):
        if tunnel not in TUNNELS:
            raise ClusterError(f"unknown tunnel {tunnel!r}; choose {', '.join(TUNNELS)}")
        object.__setattr__(self, "servers", tuple(parse_servers(
            servers if isinstance(servers, str) else list(servers))))
        object.__setattr__(self, "placement", placement)
        object.__setattr__(self, "tunnel", tunnel)
        object.__setattr__(self, "ssh_config", ssh_config)
        object.__setattr__(self, "user", user)

    def spreads(self) -> bool:
        """Does the fabric leave this machine (more than one server, or another one)?"""
        return len(self.servers) > 1 or self.servers[0] != LOCALHOST


class Servers(dict):
    """Server name -> LocalServer | SshServer."""

    def of(self, node: Any) -> LocalServer | SshServer:
        """The server a Mininet node runs on (nodes without `server` are local)."""
        return self[getattr(node, "server", LOCALHOST)]

    @staticmethod
    def route_source(ip: str) -> str:
        """This machine's source address towards `ip`."""
        out = subprocess.run(["ip", "route", "get", ip], capture_output=True, text=True,
                             check=False).stdout.split()
        return out[out.index("src") + 1] if "src" in out else "127.0.0.1"


class ClusterNetwork(FabricNetwork):
    """FabricNetwork over several servers (see the module doc)."""

    def __init__(self, spec: FabricSpec, target: Target | None, *,
                 cluster: ClusterOptions | None = None, **kwargs: Any):
        super().__init__(spec, target, **kwargs)
        if cluster is None:
            raise ClusterError("ClusterNetwork needs ClusterOptions (servers)")
        self.options: ClusterOptions = cluster
        self.placement: Placement = place(spec, list(self.options.servers),
                                          self.options.placement)
        unset = [f"{ln.a.node}~{ln.b.node}" for ln in spec.links
                 if ln.mtu is not None and not self._local(ln)]
        if unset:
            raise ClusterError(f"link MTUs are set on this machine's links only; {len(unset)} "
                               f"link(s) on other servers or between them have one: "
                               f"{', '.join(unset[:6])}{' ...' if len(unset) > 6 else ''} "
                               f"(leave it unset there: the kernel's 1500)")
        self.servers = Servers()
        self._control_dir: Path | None = None

    # ---- building -----------------------------------------------------------------------
    def _build(self) -> None:
        self._connect()
        super()._build()
        assert self.net is not None and self.state is not None  # made by start() and _build()
        for link in self.net.links:  # ssh tunnels, for `fabric-lab clean` after a hard kill
            if isinstance(getattr(link, "tunnel", None), subprocess.Popen):
                self.state.add(link.tunnel.pid, "node", f"tunnel {link.intf1.name}")
        self.state.save()

    def _connect(self) -> None:
        """One shared ssh connection per other server, checked, with the forwards."""
        self._control_dir = Path(tempfile.mkdtemp(prefix="fl-ssh-"))
        assert self.state is not None
        remote_dir = f"{run_dir()}/cluster/{self.state.owner.pid}-{self.state.owner.ticks}"
        for name in self.placement.servers:
            if name == LOCALHOST:
                self.servers[name] = LocalServer()
                continue
            ip = RemoteMixin.findServerIP(name)
            if not ip:
                raise ClusterError(f"server {name!r}: no IPv4 address (getent ahostsv4)")
            server = SshServer(name, ip, remote_dir, self._control_dir, user=self.options.user,
                               ssh_config=self.options.ssh_config)
            self.servers[name] = server
            server.connect()
            assert server.master is not None  # connect() started it or raised
            self.state.add(server.master.pid, "node", f"ssh {name}")
            check_server(server, self._sessions_needed(name))
            server.forward(self._forwards(name, ip))
        self.state.save()

    def _sessions_needed(self, server: str) -> int:
        """ssh sessions the run holds open on `server`: a shell per node, a switch process per
        switch, and a few commands at a time."""
        nodes = self.placement.nodes_on(server)
        return len(nodes) + sum(1 for n in nodes if self.spec.is_switch(n)) + 4

    def _cross_links(self) -> list[CrossLink]:
        assert self.net is not None  # built
        out = []
        for ln in self.placement.crossing(self.spec):
            ends = []
            for end in (ln.a, ln.b):
                node = self.net.get(end.node)
                ends.append(LinkEnd(self.servers.of(node),
                                    node.pid if node.inNamespace else None, end.intf))
            out.append(CrossLink(ends[0], ends[1], self.options.tunnel))
        return out

    def _forwards(self, server: str, ip: str) -> list[tuple[int, str, int]]:
        ports = []
        for sw in self.spec.switches:
            if self.placement.server_of(sw.name) == server:
                ports += [(sw.grpc_port, ip, sw.grpc_port),
                          (sw.thrift_port, "127.0.0.1", sw.thrift_port + THRIFT_SHIFT)]
        return ports

    def _mininet(self) -> MininetCluster:
        names = list(self.placement.servers)
        link = functools.partial(TUNNELS[self.options.tunnel], servers=self.servers)
        return MininetCluster(controller=None, build=False, autoSetMacs=False,
                              autoStaticArp=False, servers=names, user=self.options.user,
                              serverIP={n: self.servers[n].ip for n in names},
                              precheck=False, link=link)

    def _node_params(self, name: str) -> dict[str, Any]:
        server = self.servers[self.placement.server_of(name)]
        if server.local:
            return {}
        cls = RemoteP4Switch if self.spec.is_switch(name) else RemoteFabricHost
        return {"cls": cls, "server": server.name, "serverIP": server.ip,
                "user": self.options.user, "controlPath": server.control_path,
                "cluster_server": server}

    def _local(self, ln: Link) -> bool:
        """Whether both ends of `ln` are on this machine."""
        a, b = self.placement.server_of(ln.a.node), self.placement.server_of(ln.b.node)
        return a == b == LOCALHOST

    def _link_params(self, ln: Link) -> dict[str, Any]:
        """Links inside this machine are patched as on one machine; links inside another server
        are veth pairs made there, links between servers tunnels (the network's link class)."""
        return super()._link_params(ln) if self._local(ln) else {}

    def _record(self, node: Any, kind: str) -> None:
        if isinstance(node, RemoteMixin) and node.isRemote:
            # its pid is on the other server: record the local ssh client holding its shell
            assert self.state is not None  # start() records the run before building
            self.state.add(node.shell.pid, "node", f"{node.name}@{node.server}")
        else:
            super()._record(node, kind)

    def _shape_links(self) -> None:
        """Every link between servers carries a frame each way (before any switch starts);
        then tc per server: remote NICs and remote switch ends through their server."""
        check_links(self._cross_links())
        remote: dict[tuple[str, str], list[str]] = {}
        local: dict[str, list[str]] = {}
        netem = netem_available()  # of this kernel; the servers are set up alike
        if not netem and any(ln.delay_ms for ln in self.spec.links):
            self.warnings.append("link delays are not emulated: this kernel has no sch_netem "
                                 "(rates and queue depths are)")
            _warn_once(self.warnings[-1])
        for ln in self.spec.links:
            for end in (ln.a, ln.b):
                ns = "" if self.spec.is_switch(end.node) else end.node
                server = self.placement.server_of(end.node)
                lines = tc_batch(end.intf, ln, netem=netem)
                if self.servers[server].local:
                    local.setdefault(ns, []).extend(lines)
                else:
                    remote.setdefault((server, ns), []).extend(lines)
        for ns, lines in local.items():
            if lines:
                self._run_tc(ns, lines)
        for (server, ns), lines in remote.items():
            if not lines:
                continue
            text = "\n".join(lines) + "\n"
            if ns:
                proc = self.host(ns).popen(["tc", "-batch", "-"], stdin=subprocess.PIPE,
                                           text=True)
                _, err = proc.communicate(text)
                if proc.returncode != 0:
                    raise ClusterError(f"{ns}@{server}: tc failed shaping links: {err.strip()}")
            else:
                self.servers[server].run(["tc", "-batch", "-"], input=text)

    # ---- teardown -----------------------------------------------------------------------
    def remote_servers(self) -> list[SshServer]:
        return [s for s in self.servers.values() if isinstance(s, SshServer) and s.master]

    def stop(self) -> None:
        """Remote processes first (switches included), then Mininet on every server, then a
        sweep per server for what is left, then the ssh connections."""
        with signals_deferred():
            try:
                for server in self.remote_servers():
                    server.sweep(final=False)
                if self.net is not None:
                    for sw in self.net.switches:
                        if isinstance(sw, RemoteP4Switch):
                            sw.stop_target()
                super().stop()
            finally:
                for server in self.remote_servers():
                    names = [end.intf for ln in self.spec.links for end in (ln.a, ln.b)
                             if self.placement.server_of(end.node) == server.name]
                    server.sweep(names)
                    server.close()
                self.servers.clear()
                if self._control_dir is not None:
                    shutil.rmtree(self._control_dir, ignore_errors=True)
                    self._control_dir = None
