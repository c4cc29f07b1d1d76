"""Mininet node classes: a P4 switch node running a Target, and a host node for one NIC.

Switch nodes live in the root namespace (as Mininet switches normally do): their interfaces
`<switch>-eth<port>` are root-namespace veth ends, and the target process runs there too, started
from an argv list in its own session. Each host (NIC) node is a network namespace of its own.
The target, the nodes' shells and whatever runs in a node end with the process that built the
network, also when it is killed (`OwnedProcesses`).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mininet.node import Host, Switch

from targets import Target
from topos.errors import FabricLabError
from topos.filenames import file_part
from topos.mininet.forked import ForkedProcess, ForkServerClient
from topos.mininet.procs import accepts, signal_group, spawn, stop_child
from topos.model import Nic
from topos.model import Switch as SwitchModel

OFFLOADS = ["tx", "off", "rx", "off", "sg", "off", "tso", "off", "gso", "off", "gro", "off"]


class SwitchStartError(FabricLabError, RuntimeError):
    pass


def _run(argv: list[str], what: str, stdin: str | None = None) -> None:
    """Run a root-namespace command; raise with its stderr if it fails."""
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({' '.join(argv)}): {done.stderr.strip()}")


def _run_all(commands: Sequence[tuple[list[str], str]]) -> None:
    """Run root-namespace commands side by side; raise naming the first that failed."""
    procs = [(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True), argv, what) for argv, what in commands]
    failed = []
    for proc, argv, what in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            failed.append(f"{what} failed ({' '.join(argv)}): {err.strip()}")
    if failed:
        raise RuntimeError(failed[0])


def grpc_listening(port: int, host: str = "127.0.0.1") -> bool:
    """Readiness probe: does a TCP connect to the gRPC port succeed (`procs.accepts`)?"""
    return accepts(port, host)


class OwnedProcesses:
    """Node mix-in: the node's shell and everything started in it (`popen`) end with the process
    that made the network, also on SIGKILL (`topos.mininet.procs.spawn`).

    Mininet's `popen` runs `mnexec -da PID CMD`, and `mnexec -d` forks when it leads its process
    group (as with `start_new_session=True`): the parent-death setting would stay with the exiting
    fork and `Popen.pid` would name it. So `popen` attaches with `mnexec -a` and detaches through
    Popen's own `setsid` (the same new session `-d` gives), and `mnexec` execs the command itself.
    """

    pid: int

    def _popen(self, cmd: list[str], **params: Any) -> subprocess.Popen:
        return spawn(cmd, **params)

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen:
        if "mncmd" not in kwargs:
            kwargs["mncmd"] = ["mnexec", "-a", str(self.pid)]
            kwargs["start_new_session"] = True
        return super().popen(*args, **kwargs)  # type: ignore[misc]


def _launch(argv: list[str], log_path: Path, forkserver: ForkServerClient | None
            ) -> subprocess.Popen | ForkedProcess:
    """Start a target process: forked by `forkserver` when there is one, else exec'd."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if forkserver is not None:
        return forkserver.launch(argv, log_path)
    with open(log_path, "wb") as log:
        return spawn(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                     start_new_session=True)


class SharedProcess:
    """One target process serving several switch nodes (`Target.group_argv`): launched when
    the last of its `members` starts, and every member's `proc`; stopping one member stops it."""

    def __init__(self, name: str, target: Target, log_dir: Path,
                 forkserver: ForkServerClient | None = None,
                 on_start: Callable[[int], None] | None = None):
        self.name = name
        self.target = target
        self.log_path = Path(log_dir) / f"{file_part(name)}.log"
        self.forkserver = forkserver
        self.on_start = on_start
        self.members: list[P4Switch] = []
        self._waiting: set[str] = set()

    def member_started(self, node: P4Switch) -> None:
        """`node` has its argv; once every member has, start the process."""
        self._waiting.add(node.name)
        if len(self._waiting) < len(self.members):
            return
        self._waiting.clear()
        proc = _launch(self.target.group_argv([m.argv for m in self.members]), self.log_path,
                       self.forkserver)
        for member in self.members:
            member.proc = proc
        if self.on_start:
            self.on_start(proc.pid)


class P4Switch(OwnedProcesses, Switch):
    """A switch node whose data plane is a Target process (p4switch or simple_switch_grpc).

    `target=None` starts no process and only prepares the ports: a hosts-and-links mode for tests
    and the bring-up benchmark, never for experiments. With a `forkserver` the target process is
    forked from it (`topos.mininet.forked`) rather than started as a program; with `shared` the
    process serves this switch and others (`SharedProcess`).
    """

    def __init__(self, name: str, model: SwitchModel, ports: dict[int, str],
                 target: Target | None, log_dir: Path, *, pcap_dir: Path | None = None,
                 log_console: bool = False, ready_timeout: float = 20.0,
                 stop_timeout: float = 5.0, on_start: Callable[[int], None] | None = None,
                 forkserver: ForkServerClient | None = None,
                 shared: SharedProcess | None = None, **params: Any):
        params.pop("inNamespace", None)
        super().__init__(name, dpid=f"{model.device_id:x}", inNamespace=False, **params)
        self.model = model
        self.p4_ports = dict(ports)
        self.target = target
        self.log_dir = Path(log_dir)
        self.pcap_dir = pcap_dir
        self.log_console = log_console
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.on_start = on_start
        self.forkserver = forkserver
        self.shared = shared
        if shared is not None:
            shared.members.append(self)
        self.proc: subprocess.Popen | ForkedProcess | None = None
        self.argv: list[str] = []

    @property
    def log_path(self) -> Path:
        return self.shared.log_path if self.shared is not None else \
            self.log_dir / f"{file_part(self.name)}.log"

    def prepare_ports(self) -> None:
        """Ports up, IPv6 off (one command each for all ports), offloads off (side by side)."""
        intfs = list(self.p4_ports.values())
        if not intfs:
            return
        _run(["ip", "-batch", "-"], f"{self.name}: bringing {', '.join(intfs)} up",
             "".join(f"link set dev {intf} up\n" for intf in intfs))
        _run(["sysctl", "-q", "-w", *(f"net.ipv6.conf.{intf}.disable_ipv6=1" for intf in intfs)],
             f"{self.name}: disabling IPv6 on {', '.join(intfs)}")
        _run_all([(["ethtool", "-K", intf, *OFFLOADS], f"{self.name}: offloads off on {intf}")
                  for intf in intfs])

    def start(self, controllers: Sequence[Any] = ()) -> None:
        """Launch the target (non-blocking); `batchStartup` waits for every switch to be ready."""
        self.prepare_ports()
        if self.target is None:
            return
        if grpc_listening(self.model.grpc_port):
            raise SwitchStartError(f"{self.name}: something already listens on gRPC port "
                                   f"{self.model.grpc_port} (a switch left running? try "
                                   f"`fabric-lab clean`)")
        self.argv = self.target.argv(self.model, self.p4_ports, pcap_dir=self.pcap_dir,
                                     log_console=self.log_console)
        if self.shared is not None:
            self.shared.member_started(self)
            return
        self.proc = _launch(self.argv, self.log_path, self.forkserver)
        if self.on_start:
            self.on_start(self.proc.pid)

    def wait_ready(self, deadline: float) -> None:
        """Poll until the gRPC port accepts a connection; fail early if the process exits."""
        if self.proc is None:
            if self.shared is not None and self.target is not None:
                raise SwitchStartError(f"{self.name}: its process ({self.shared.name}) did not "
                                       "start: not every switch it serves was started")
            return
        port = self.model.grpc_port
        while not grpc_listening(port):
            if self.proc.poll() is not None:
                raise SwitchStartError(f"{self.name}: {self.argv[0]} exited with status "
                                       f"{self.proc.returncode} before listening on port {port}"
                                       f"\n{self._log_tail()}")
            if time.monotonic() > deadline:
                raise SwitchStartError(f"{self.name}: gRPC port {port} not listening after "
                                       f"{self.ready_timeout:g} s\n{self._log_tail()}")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.02)  # poll interval; returns at once on exit

    def _log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return f"(no log at {self.log_path})"
        return f"last lines of {self.log_path}:\n" + "\n".join(text)

    def stop_target(self) -> int | None:
        """SIGTERM the target, SIGKILL after `stop_timeout`; returns its exit status."""
        if self.proc is None:
            return None
        status = stop_child(self.proc, self.stop_timeout)
        self.proc = None
        return status

    def stop(self, deleteIntfs: bool = True) -> None:
        self.stop_target()
        super().stop(deleteIntfs)

    @classmethod
    def batchStartup(cls, switches: Sequence[P4Switch]) -> Sequence[P4Switch]:
        """Wait for every started switch in parallel-start fashion: one shared deadline."""
        start = time.monotonic()
        for sw in switches:
            sw.wait_ready(start + sw.ready_timeout)
        return switches

    @classmethod
    def batchShutdown(cls, switches: Sequence[P4Switch]) -> Sequence[P4Switch]:
        """SIGTERM every target first, then wait for each (SIGKILL on timeout), then clean up."""
        for sw in switches:
            if sw.proc is not None:
                signal_group(sw.proc.pid, signal.SIGTERM)
        for sw in switches:
            sw.stop_target()
            sw.deleteIntfs()
        return switches


class FabricHost(OwnedProcesses, Host):
    """One NIC as a namespace: its ports, IPv4 and MAC from the plan, static ARP to every other
    NIC, a default route out of the NIC (multipath over both ports of a dual-port NIC), checksum
    and segmentation offloads off, IPv6 off."""

    def __init__(self, name: str, nic: Nic, peers: Sequence[tuple[str, str]], **params: Any):
        super().__init__(name, **params)
        self.nic = nic
        self.peers = list(peers)

    def configDefault(self, **_: Any) -> None:
        """Called by Mininet's build(): configure from the plan, not Mininet's defaults."""
        self.configure()

    def _exec(self, argv: list[str], what: str, stdin: str | None = None) -> None:
        proc = self.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
        _, err = proc.communicate(stdin.encode() if stdin else None)
        if proc.returncode != 0:
            raise RuntimeError(f"{self.name}: {what} failed: {err.decode(errors='replace')}")

    def configure(self) -> None:
        intfs = [self.intfs[port].name for port in sorted(self.intfs)]
        if not intfs:
            raise RuntimeError(f"{self.name}: NIC has no ports")
        sysctls = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
                   "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
                   "net.ipv4.fib_multipath_hash_policy=1",
                   # a dual-port NIC stops using a port whose link is down (HPN dual-ToR failover)
                   "net.ipv4.conf.all.ignore_routes_with_linkdown=1"]
        sysctls += [f"net.ipv4.conf.{i}.rp_filter=0" for i in intfs]
        self._exec(["sysctl", "-q", "-w", *sysctls], "sysctl")
        for intf in intfs:
            self._exec(["ethtool", "-K", intf, *OFFLOADS], f"offloads off on {intf}")
        batch = ["link set dev lo up"]
        for intf in intfs:
            batch += [f"link set dev {intf} address {self.nic.mac}", f"link set dev {intf} up"]
        batch.append(f"addr add {self.nic.ip}/32 dev {intfs[0]}")
        if len(intfs) == 1:
            batch.append(f"route replace default dev {intfs[0]}")
        else:
            batch.append("route replace default " + " ".join(f"nexthop dev {i}" for i in intfs))
        for ip, mac in self.peers:
            batch += [f"neigh replace {ip} lladdr {mac} dev {intf} nud permanent"
                      for intf in intfs]
        self._exec(["ip", "-batch", "-"], "address/route/ARP set-up", "\n".join(batch) + "\n")
        for port in self.intfs:
            self.intfs[port].ip, self.intfs[port].prefixLen = self.nic.ip, 32
            self.intfs[port].mac = self.nic.mac
