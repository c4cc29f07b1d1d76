"""One running fabric: network, switches, routes, the controller's loops, torn down in reverse.

    with FabricSession(spec, program=PROGRAM, reconverge=True, probes=True) as session:
        session.ctl.routes()                      # the controller, connected and programmed
        agent = session.agent("h0n0")             # a traffic worker in a NIC's namespace
        session.host("h3n0").popen([...])

Bring-up, in order: the network (Mininet hosts and links, one switch process per switch, each
probed until it answers) while the P4 program compiles for the target, the controller
(connected, pipeline and routes written), the `setup` hooks in their order (load-balancing
knobs, queue rates, ...; each may return what undoes it), then the optional loops: the
reconverger (reroutes on port events) and the link prober (isolates links it finds dropping).
`stop()` (also on errors and Ctrl-C, from `with`) undoes everything in the reverse order it
came up in: traffic workers and what `on_stop` registered since, the loops, the hooks' undo
steps, the controller, the network; a signal that comes while it runs is acted on once it is
done.

What an experiment adds (flows, failures, counters) lives in the experiment and uses the session;
the session has no experiment's knowledge.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from controller.fabric import FabricController
from controller.pipeline import Pipeline, build_pipeline
from topos.model import FabricSpec

if TYPE_CHECKING:
    from controller.probes import LinkProber
    from controller.reconverge import Reconverger
    from targets import Target
    from topos.mininet.cluster import ClusterOptions
    from traffic.agent import Agent
    from traffic.hosts import MininetHost

# a setup hook runs once the switches are programmed; what it returns (if callable) undoes it
Setup = Callable[["FabricSession"], object]


class StageLog(Protocol):
    """Where bring-up stage times go (`fabric-lab up` prints them)."""

    def stage(self, name: str) -> contextlib.AbstractContextManager: ...

    def record(self, name: str, took: float) -> None: ...


class _Quiet:
    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        yield

    def record(self, name: str, took: float) -> None:
        pass


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP for the block (a teardown, closing gRPC channels, must not be
    cut short), then act on one that came: exit as the previous handler would have had it
    interrupt. Outside the main thread, nothing to hold."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda signum, _frame: caught.append(signum))
                for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if caught:
            if caught[0] == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + caught[0])


def _timed(fn: Callable, *args: Any) -> tuple[Any, float]:
    started = time.monotonic()
    return fn(*args), time.monotonic() - started


class FabricSession:
    """A fabric brought up, programmed and looked after; a context manager (see the module).

    `program` is a P4 program's path, compiled while the network starts, or a `Pipeline`
    compiled already; `target` is a target name (`get_target`) or a `Target` (checked to be
    installed); `cluster` (ClusterOptions, e.g. `RunContext.cluster`) spreads the network over several
    servers; `controller` are FabricController options (election_id, hash_seed); `setup` maps
    a stage name to a hook run after programming; `timer` gets each bring-up stage's time."""

    def __init__(self, spec: FabricSpec, *, program: str | Path | Pipeline,
                 target: str | Target = "p4switch",
                 log_dir: Path | None = None, pcap_dir: Path | None = None,
                 cluster: ClusterOptions | None = None, controller: Mapping[str, Any] | None = None,
                 setup: Mapping[str, Setup] | None = None, reconverge: bool = False,
                 probes: bool = False, watch_interval: float = 0.05, probe_period: float = 1.0,
                 timer: StageLog | None = None) -> None:
        from targets import get_target
        from topos.mininet.network import fabric_network

        self.spec = spec
        self.target: Target = get_target(target).ensure_available()
        # a Pipeline is compiled already (`fabric-lab up` compiles before bring-up)
        self.program = program if isinstance(program, Pipeline) else Path(program)
        self.log_dir = log_dir
        self.controller_options = dict(controller or {})
        self.setup = dict(setup or {})
        self.loops = (reconverge, probes)
        self.watch_interval, self.probe_period = watch_interval, probe_period
        self.timer: StageLog = timer or _Quiet()
        self.cluster = cluster
        self.net = fabric_network(spec, self.target, cluster=cluster, log_dir=log_dir,
                                  pcap_dir=pcap_dir)
        self.ctl: FabricController | None = None
        self.reports: list = []  # what programming wrote, per switch
        self.rc: Reconverger | None = None
        self.prober: LinkProber | None = None
        self._undo = contextlib.ExitStack()  # what stop() undoes, last first
        self._loops_undo = False
        self._running = False

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self) -> FabricSession:
        """Bring everything up; on any failure (Ctrl-C included) take down what came up."""
        self._running = True
        self._undo.callback(self.net.stop)
        compiling = ThreadPoolExecutor(max_workers=1)
        try:
            # the program compiles while the switches start (mostly waiting on them)
            compiled = compiling.submit(_timed, self._pipeline)
            with self.timer.stage("mininet + switches ready"):
                self.net.start()
            pipeline, took = compiled.result()
            self.timer.record(f"compile ({self.target.name}, overlapped)", took)
            self.ctl = FabricController(self.spec, pipeline, **self.controller_options)
            self._undo.callback(self._close_controller)
            with self.timer.stage("controller connected"):
                self.ctl.connect()
            with self.timer.stage("pipeline + routes"):
                self.reports = self.ctl.program()
            for name, hook in self.setup.items():
                with self.timer.stage(name):
                    undo = hook(self)
                if callable(undo):
                    self._undo.callback(undo)
            self.start_loops(*self.loops)
        except BaseException:
            compiling.shutdown(wait=True)
            self.stop()
            raise
        compiling.shutdown(wait=True)
        return self

    def _pipeline(self) -> Pipeline:
        if isinstance(self.program, Pipeline):
            return self.program
        return build_pipeline(self.program, self.target)

    def stop(self) -> None:
        """Undo what came up, last first (loops, traffic workers, hooks' undo steps, the
        controller, the network). Safe to call twice and after a failed start."""
        if not self._running:
            return
        self._running = False
        with signals_held():
            try:
                self._undo.close()
            finally:
                self.rc = self.prober = self.ctl = None
                self._loops_undo = False

    def __enter__(self) -> FabricSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def on_stop(self, undo: Callable[[], Any]) -> None:
        """Run `undo` when the session stops (before the controller and network go)."""
        self._undo.callback(undo)

    def connected(self) -> FabricController:
        """The controller of a started session."""
        if self.ctl is None:
            raise RuntimeError("the fabric session is not running")
        return self.ctl

    def disconnect(self) -> None:
        """Close the controller's connections (the fabric stays routed), e.g. to let another
        controller connect."""
        with signals_held():
            self._close_controller()

    def _close_controller(self) -> None:
        if self.ctl is not None:
            self.ctl.close()

    # ---- the controller's loops ----------------------------------------------------------
    def start_loops(self, reconverge: bool = True, probes: bool = True) -> None:
        """Start the reconvergence loop and/or the link probes (those not running yet); the
        probes' verdicts go to the reconverger when both run."""
        from controller.probes import LinkProber
        from controller.reconverge import Reconverger

        ctl = self.connected()
        if (reconverge or probes) and not self._loops_undo:
            self._loops_undo = True
            self._undo.callback(self.stop_loops)
        if reconverge and self.rc is None:
            log = self.log_dir / "link-events.log" if self.log_dir else None
            self.rc = Reconverger(ctl, interval=self.watch_interval, log_path=log).start()
        if probes and self.prober is None:
            self.prober = LinkProber(ctl, period=self.probe_period).start()
        if self.prober is not None and self.rc is not None:
            self.prober.on_verdict = self.rc.isolate

    def stop_loops(self) -> tuple[bool, bool]:
        """Stop the probes and the reconverger; which of (reconverger, probes) were running."""
        running = (self.rc is not None, self.prober is not None)
        if self.prober is not None:
            self.prober.stop()
        if self.rc is not None:
            self.rc.stop()
        self.rc = self.prober = None
        return running

    # ---- what the switches dropped -------------------------------------------------------
    def kernel_drops(self, switches: Iterable[str] | None = None) -> int | None:
        """Frames the kernel dropped so far on the receive rings of `switches` (default: all):
        a switch kept off the CPU long enough overflows them (p4switch's `port_stats`
        rx_dropped). None where that cannot be read: BMv2, or switches on several servers."""
        if self.target.name != "p4switch" or self.cluster is not None:
            return None
        from controller.queues import run_commands

        chosen = self.spec.switches if switches is None else map(self.spec.switch, switches)
        return sum(int(n) for sw in chosen
                   for n in re.findall(r"rx_dropped (\d+)",
                                       run_commands(self.target, sw.thrift_port,
                                                    ["port_stats"])))

    def kernel_drops_since(self, before: int | None) -> int | None:
        """Frames the receive rings dropped since `before` (an earlier `kernel_drops()`);
        None where that cannot be read."""
        after = self.kernel_drops()
        return None if before is None or after is None else after - before

    # ---- hosts ---------------------------------------------------------------------------
    def host(self, nic: str) -> MininetHost:
        from traffic.hosts import MininetHost

        return MininetHost(self.net.host(nic))

    def agent(self, nic: str) -> Agent:
        """A new traffic worker in the NIC's namespace, closed when the session stops."""
        from traffic.agent import Agent

        agent = Agent(self.host(nic))
        self._undo.callback(agent.close)
        return agent


LabT = TypeVar("LabT", bound="SessionLab")


class SessionLab:
    """An experiment's lab on one `FabricSession`: its network and controller, started and
    stopped with the session; a context manager."""

    session: FabricSession

    @property
    def net(self) -> Any:
        return self.session.net

    @property
    def ctl(self) -> FabricController | None:
        return self.session.ctl

    def kernel_drops(self, switches: Iterable[str] | None = None) -> int | None:
        """The switches' receive-ring drops so far (`FabricSession.kernel_drops`)."""
        return self.session.kernel_drops(switches)

    def kernel_drops_since(self, before: int | None) -> int | None:
        return self.session.kernel_drops_since(before)

    def start(self: LabT) -> LabT:
        self.session.start()
        return self

    def stop(self) -> None:
        self.session.stop()

    def __enter__(self: LabT) -> LabT:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
