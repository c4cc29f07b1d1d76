"""Turn a FabricSpec into a running Mininet network, and take it down on every exit path.

    with FabricNetwork(spec, P4SWITCH) as net:
        net.host("h0n0").popen([...])

`fabric_network(spec, target, cluster=options)` is a FabricNetwork, or a ClusterNetwork
(`topos.mininet.cluster`) when the options name servers other than this machine.

One namespace per NIC (Mininet host named after the NIC), switch nodes in the root namespace,
tc rate/delay/queue where the model sets them (see `shaping`). Before anything is created, what a
killed run left is cleaned or refused (`leftovers`) and a run-state file lists every interface
name; every process started is added to it, so `fabric-lab clean` can
remove what a SIGKILLed run left. SIGTERM and SIGHUP are turned into SystemExit while the network
runs (as SIGINT is into KeyboardInterrupt), so `with` blocks and try/finally clean up.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mininet.net import Mininet

from targets import Target
from targets.base import TargetError
from topos.filenames import file_part
from topos.mininet.forked import ForkServerClient
from topos.mininet.leftovers import LeftoverError, clear_dead_runs, refuse_unrecorded
from topos.mininet.nodes import FabricHost, P4Switch, SharedProcess
from topos.mininet.patch import PatchedLink, PatchError, patch_names
from topos.mininet.runstate import RunState
from topos.mininet.shaping import netem_available, run_tc_batch, tc_batch
from topos.model import FabricSpec, Link

if TYPE_CHECKING:
    from topos.mininet.cluster import ClusterOptions


@functools.cache
def _warn_once(message: str) -> None:
    print(f"fabric-lab: warning: {message}", file=sys.stderr)


def _raise_exit(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def exit_on_signals(signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[None]:
    """Turn `signals` into SystemExit inside the block (main thread only), restoring after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_exit) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ignore SIGINT/SIGTERM/SIGHUP while tearing down, so a second Ctrl-C cannot cut it short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class FabricNetwork:
    """A Mininet network built from `spec`; `target=None` builds hosts and links only (tests and
    the bring-up benchmark: switch ports exist but nothing forwards)."""

    def __init__(self, spec: FabricSpec, target: Target | None, *,
                 log_dir: Path | None = None, pcap_dir: Path | None = None,
                 log_console: bool = False, run_dir: Path | None = None,
                 ready_timeout: float = 20.0, stop_timeout: float = 5.0):
        self.spec = spec
        self.target = target
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix=f"fabric-lab-{file_part(spec.name)}-"))
        self.pcap_dir = pcap_dir
        self.log_console = log_console
        self.run_dir = run_dir
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.net: Mininet | None = None
        self.state: RunState | None = None
        self.forkserver: ForkServerClient | None = None
        self._signals: contextlib.ExitStack | None = None
        self.warnings: list[str] = []

    # ---- access -------------------------------------------------------------------------
    def host(self, nic: str) -> FabricHost:
        assert self.net is not None, "network not started"
        return self.net.get(nic)

    def switch(self, name: str) -> P4Switch:
        assert self.net is not None, "network not started"
        return self.net.get(name)

    def interfaces(self) -> list[str]:
        """Every interface name of the plan (switch and NIC ends)."""
        return [end.intf for ln in self.spec.links for end in (ln.a, ln.b)]

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self) -> FabricNetwork:
        self._signals = contextlib.ExitStack()
        self._signals.enter_context(exit_on_signals())
        try:
            self._clear_leftovers()
            self.state = RunState.create(self.spec.name, self.interfaces(), self.run_dir)
            self._start_forkserver()
            self._build()
            assert self.net is not None  # _build() made it
            try:
                self.net.build()
            except PatchError as err:
                if "File exists" not in str(err):
                    raise
                raise LeftoverError(f"{err} (an interface of another network is in the way: "
                                    f"`sudo fabric-lab clean` removes the lab's)") from None
            self._shape_links()
            self.net.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _clear_leftovers(self) -> None:
        """Before creating anything: clean up after killed runs (one line each), refuse when a
        live run or something unrecorded is in the way (`topos.mininet.leftovers`)."""
        names = self.interfaces()
        clear_dead_runs(names, self.run_dir, timeout=self.stop_timeout,
                        say=lambda line: print(line, file=sys.stderr, flush=True))
        ports = [] if self.target is None else [
            (sw.name, what, port) for sw in self.spec.switches
            for what, port in (("gRPC", sw.grpc_port), ("thrift", sw.thrift_port))]
        refuse_unrecorded(names, [p for ln in self.spec.links for p in patch_names(ln.a.intf)],
                          ports)

    def _start_forkserver(self) -> None:
        """The target's fork server, when it has one: it loads while the links are built, and
        each switch is then forked from it (`topos.mininet.forked`)."""
        argv = None if self.target is None else self.target.forkserver_argv()
        if argv is None:
            return
        assert self.state is not None
        self.forkserver = ForkServerClient(argv, stop_timeout=self.stop_timeout + 5)
        self.state.add(self.forkserver.pid, "forkserver", "fork server")
        self.state.save()

    def _build(self) -> None:
        """Nodes and links; `_mininet`, `_node_params` and `_record` are what a network spread
        over several servers (`topos.mininet.cluster.ClusterNetwork`) changes."""
        assert self.state is not None  # start() records the run before building
        self.net = self._mininet()
        all_nics = self.spec.host_nics()
        for nic in all_nics:
            peers = [(o.ip, o.mac) for o in all_nics if o.name != nic.name]
            host = self.net.addHost(nic.name, **{"cls": FabricHost, **self._node_params(nic.name)},
                                    nic=nic, peers=peers, ip=None)
            self._record(host, "host")
        shared = self._shared_processes()
        for sw in self.spec.switches:
            node = self.net.addSwitch(
                sw.name, **{"cls": P4Switch, **self._node_params(sw.name)}, model=sw,
                ports=self.spec.ports(sw.name), target=self.target, log_dir=self.log_dir,
                pcap_dir=self.pcap_dir, log_console=self.log_console,
                ready_timeout=self.ready_timeout, stop_timeout=self.stop_timeout,
                forkserver=self.forkserver, shared=shared.get(sw.name),
                on_start=lambda pid, name=sw.name: self._started(pid, name))
            self._record(node, "node")
        self.state.save()
        for ln in self.spec.links:
            self.net.addLink(self.net.get(ln.a.node), self.net.get(ln.b.node),
                             port1=ln.a.port, port2=ln.b.port, intfName1=ln.a.intf,
                             intfName2=ln.b.intf, addr1=ln.a.mac, addr2=ln.b.mac,
                             **self._link_params(ln))

    def _shared_processes(self) -> dict[str, SharedProcess]:
        """Switch name -> the process serving it, when the target shares `switch_processes`
        processes among the fabric's switches: dealt in the spec's order, one each in turn, so
        that every process serves switches of every tier."""
        count = None if self.target is None else self.target.switch_processes
        if count is None:
            return {}
        assert self.target is not None
        names = [sw.name for sw in self.spec.switches]
        count = min(count, len(names))
        procs = [SharedProcess(f"switches{i + 1}", self.target, self.log_dir, self.forkserver,
                               on_start=functools.partial(self._started, name=f"switches{i + 1}"))
                 for i in range(count)]
        return {name: procs[i % count] for i, name in enumerate(names)}

    def _link_params(self, ln: Link) -> dict[str, Any]:
        """Extra addLink parameters: links are patched (`topos.mininet.patch`) so that they fail
        by losing carrier at both ends."""
        return {"cls": PatchedLink, "mtu": ln.mtu}

    def _mininet(self) -> Mininet:
        return Mininet(controller=None, build=False, autoSetMacs=False, autoStaticArp=False)

    def _node_params(self, _name: str) -> dict[str, Any]:
        """Extra addHost/addSwitch parameters of a node (its class and server in a cluster)."""
        return {}

    def _record(self, node: Any, kind: str) -> None:
        assert self.state is not None  # start() records the run before building
        self.state.add(node.pid, kind, node.name)

    def _shape_links(self) -> None:
        """tc on both ends of every link: one batch for the root namespace, one per host."""
        netem = netem_available()
        if not netem and any(ln.delay_ms for ln in self.spec.links):
            self.warnings.append("link delays are not emulated: this kernel has no sch_netem "
                                 "(rates and queue depths are)")
            _warn_once(self.warnings[-1])
        batches: dict[str, list[str]] = {}
        for ln in self.spec.links:
            for end in (ln.a, ln.b):
                ns = "" if self.spec.is_switch(end.node) else end.node
                batches.setdefault(ns, []).extend(tc_batch(end.intf, ln, netem=netem))
        for ns, lines in batches.items():
            self._run_tc(ns, lines)

    def _run_tc(self, ns: str, lines: list[str]) -> None:
        """tc batch lines for host `ns`'s namespace, or the switches' ("")."""
        run_tc_batch(lines, ["mnexec", "-a", str(self.host(ns).pid)] if ns else None)

    def _started(self, pid: int, name: str) -> None:
        assert self.state is not None  # switches start after start() recorded the run, stop after
        self.state.add(pid, "switch", name)
        self.state.save()

    def stop(self) -> None:
        """Stop switches (SIGTERM, then SIGKILL), hosts and links; idempotent."""
        with signals_deferred():
            try:
                if self.net is not None:
                    switches = [s for s in self.net.switches if isinstance(s, P4Switch)]
                    P4Switch.batchShutdown(switches)
                    self.net.stop()
                    self.net = None
                    self._wait_interfaces_gone()
                if self.forkserver is not None:
                    self.forkserver.close()
                    self.forkserver = None
                if self.state is not None:
                    self.state.remove()
                    self.state = None
            finally:
                if self._signals is not None:
                    self._signals.close()
                    self._signals = None

    def _wait_interfaces_gone(self, timeout: float = 5.0) -> None:
        """The kernel removes a veth whose peer lived in a deleted namespace a little later;
        wait for it, so the same fabric can start again straight away."""
        deadline = time.monotonic() + timeout
        names = self.interfaces()
        while any(Path("/sys/class/net", name).exists() for name in names):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def __enter__(self) -> FabricNetwork:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def fabric_network(spec: FabricSpec, target: Target | None, *,
                   cluster: ClusterOptions | None = None, **options: Any) -> FabricNetwork:
    """The network of `spec`: a ClusterNetwork when `cluster` names servers other than this
    machine, else a FabricNetwork; `options` are FabricNetwork's."""
    if cluster is None or not cluster.spreads():
        return FabricNetwork(spec, target, **options)
    if target is not None and target.switch_processes is not None:
        raise TargetError("switches sharing processes run on one server only; leave out "
                          "--switch-processes or --servers")
    from topos.mininet.cluster import ClusterNetwork  # loads Mininet's cluster edition

    return ClusterNetwork(spec, target, cluster=cluster, **options)
