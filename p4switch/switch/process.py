"""Lifecycle of one p4switch process: one switch, or a group of switches sharing its loop.

Start-up order makes readiness observable: program loaded, ports open, runtime channel
listening, and only then the gRPC port accepts connections. SIGTERM/SIGINT stop the data-plane
loop (which runs in the main thread); everything is closed before `run` returns.
"""

from __future__ import annotations

import gc
import logging
import signal
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import FrameType
from typing import TYPE_CHECKING

from p4switch.switch.dataplane import Dataplane, run_dataplanes
from p4switch.switch.device import Device, ProgramLoadError, load_program
from p4switch.switch.linkmon import LinkMonitor
from p4switch.switch.options import SwitchOptions
from p4switch.switch.pfc import PfcReceiver, sysfs_link_bps
from p4switch.switch.ports import PortError, RawPort
from p4switch.switch.runtime_server import RuntimeCommandServer, SwitchCommands
from p4switch.switch.tm import TrafficManager

if TYPE_CHECKING:
    from p4switch.server import P4RuntimeServer

log = logging.getLogger("p4switch")
PORT_THREADS = 16  # ports opened and closed side by side

_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
           "warn": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL + 10}


class StartupError(Exception):
    """The switch cannot start; the message says why."""


def setup_logging(opts: SwitchOptions) -> None:
    root = logging.getLogger("p4switch")
    root.handlers.clear()
    root.propagate = False
    if opts.log_file:
        handler: logging.Handler = logging.FileHandler(opts.log_file)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s.%(msecs)03d] [%(name)s] "
                                           "[%(levelname)s] %(message)s", "%H:%M:%S"))
    root.addHandler(handler)
    if opts.log_console or opts.log_file:
        root.setLevel(_LEVELS[opts.log_level])
    else:
        root.setLevel(logging.WARNING)


class Switch:
    """One switch: `start()` opens it, `run_switches` serves its data plane, `close()`."""

    def __init__(self, opts: SwitchOptions, alone: bool = True):
        """`alone`: the only switch of its process (a group shares the Python loop)."""
        self.opts = opts
        self.alone = alone
        self.ports: dict[int, RawPort] = {}
        self.linkmon: LinkMonitor | None = None
        self.cli_server: RuntimeCommandServer | None = None
        self.grpc: P4RuntimeServer | None = None
        self.dataplane: Dataplane | None = None
        self._stop_requested = False

    def port_up(self, port: int) -> bool:
        if port == self.opts.cpu_port:
            return True
        return self.linkmon is not None and self.linkmon.is_up(port)

    def start(self) -> None:
        opts = self.opts
        logging_on = bool(opts.log_console or opts.log_file)
        trace = log.getChild("dataplane").debug if logging_on and opts.log_level == "trace" \
            else None
        # log_msg() output, at info level as BMv2 logs it
        pipeline_log = log.getChild("pipeline").info if logging_on and opts.log_level in (
            "trace", "debug", "info") else None
        device = Device(cpu_port=opts.cpu_port, drop_port=opts.drop_port,
                        priority_queues=opts.priority_queues, port_up=self.port_up,
                        log=pipeline_log, pipeline=opts.pipeline)
        program = None
        if opts.program:
            log.info("loading %s", opts.program)
            try:
                program = load_program(opts.program)
            except ProgramLoadError as exc:
                raise StartupError(str(exc)) from None
        try:
            self._open_ports()
        except PortError as exc:
            self.close()
            raise StartupError(str(exc)) from None
        self.linkmon = LinkMonitor([(p.number, p.iface, p.ifindex) for p in self.ports.values()],
                                   self._on_port_change)
        if program is not None:
            try:
                device.install(program)
            except ProgramLoadError as exc:
                self.close()
                raise StartupError(str(exc)) from None
        self.dataplane = self._dataplane(device, trace)
        self.dataplane.trace = trace
        tm = self.dataplane.tm
        if opts.pfc:
            self.dataplane.pfc = PfcReceiver(tm.pause, opts.priority_queues, self._link_bps)
        commands = SwitchCommands(tm, dict(opts.interfaces), self.port_up, device.now_us,
                                  self._port_counters, self.dataplane.pause_hold)
        try:
            self.cli_server = RuntimeCommandServer(device, commands, opts.thrift_port,
                                                   secret=opts.runtime_secret)
        except OSError as exc:
            self.close()
            raise StartupError(f"cannot listen on 127.0.0.1:{opts.thrift_port} for the runtime "
                               f"CLI (--thrift-port): {exc}") from None
        self.cli_server.start()
        from p4switch.server import P4RuntimeServer, ServerStartError

        try:
            self.grpc = P4RuntimeServer(device, self.dataplane, opts.device_id, opts.grpc_addr,
                                        opts.grpc_tls)
        except ServerStartError as exc:
            self.close()
            raise StartupError(str(exc)) from None
        self.grpc.start()
        gc.freeze()  # start-up objects are permanent: out of the cyclic collector's way
        log.info("P4Runtime server listening on %s (device id %d), runtime CLI on port %d",
                 opts.grpc_addr, opts.device_id, self.cli_server.port)

    def _dataplane(self, device: Device, trace: object) -> Dataplane:
        """With --pipeline auto or c, the data plane whose loop is in C (p4switch/cdp/switch.py)
        where it can serve this switch; else the Python one."""
        opts = self.opts
        if opts.pipeline in ("auto", "c"):
            why = ("it logs every packet (-L trace)" if trace is not None else
                   "it captures packets (--pcap)" if opts.pcap_dir else
                   "it shares its process with other switches" if not self.alone else "")
            if not why:
                from p4switch.cdp.switch import CSwitchDataplane
                from p4switch.cdp.tm import CTrafficManager
                from p4switch.native import NativeUnavailable

                try:
                    return CSwitchDataplane(device, self.ports,
                                            CTrafficManager(opts.priority_queues), self.linkmon,
                                            self._link_bps, opts.pfc)
                except (NativeUnavailable, OSError, ValueError) as exc:
                    why = str(exc)
            (log.warning if opts.pipeline == "c" else log.info)(
                "--pipeline %s: the data-plane loop runs in Python: %s", opts.pipeline, why)
        return Dataplane(device, self.ports, TrafficManager(opts.priority_queues), self.linkmon)

    def _open_ports(self) -> None:
        """All ports side by side: setting up a port's rings waits for the kernel (RCU grace
        periods, without the GIL), and parallel waits overlap."""
        items = sorted(self.opts.interfaces.items())
        with ThreadPoolExecutor(max(1, min(len(items), PORT_THREADS))) as pool:
            futures = [pool.submit(RawPort, number, iface, self.opts.pcap_dir)
                       for number, iface in items]
            failure = None
            for (number, iface), future in zip(items, futures, strict=True):
                try:
                    self.ports[number] = future.result()
                    log.info("port %d attached to %s", number, iface)
                except PortError as exc:
                    failure = failure or exc
        if failure is not None:
            raise failure

    def _close_ports(self) -> None:
        """Closing a socket waits for grace periods as well: side by side too."""
        ports, self.ports = list(self.ports.values()), {}
        with ThreadPoolExecutor(max(1, min(len(ports), PORT_THREADS))) as pool:
            list(pool.map(RawPort.close, ports))

    def _port_counters(self, port: int) -> dict[str, int]:
        counters = getattr(self.dataplane, "port_counters", None)
        if counters is not None:  # the C loop counts
            return counters(port)
        p = self.ports[port]
        p.kernel_drops()
        return dict(vars(p.counters))

    def _link_bps(self, port: int) -> float:
        if self.opts.pfc_link_mbps is not None:
            return self.opts.pfc_link_mbps * 1e6
        return sysfs_link_bps(self.opts.interfaces.get(port, ""))

    def _on_port_change(self, port: int, up: bool) -> None:
        log.info("port %d (%s) is %s", port, self.opts.interfaces.get(port, "?"),
                 "UP" if up else "DOWN")
        if self.dataplane is not None:  # action selectors watch ports
            self.dataplane.device.note_write()

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def stop(self) -> None:
        """Ask the loop serving this switch to return (safe from a signal handler)."""
        self._stop_requested = True
        if self.dataplane is not None:
            self.dataplane.stop()

    def close(self) -> None:
        t0 = time.monotonic()
        if self.grpc is not None:
            self.grpc.stop()
            self.grpc = None
        log.debug("gRPC server stopped in %.3f s", time.monotonic() - t0)
        if self.cli_server is not None:
            self.cli_server.close()
            self.cli_server = None
        self._close_ports()
        if self.linkmon is not None:
            self.linkmon.close()
            self.linkmon = None
        if self.dataplane is not None:
            self.dataplane.close()
            self.dataplane = None


def run_switches(group: Sequence[SwitchOptions]) -> int:
    """Run one switch, or a group of switches whose data planes share this process's loop
    (`p4switch ARGS :: ARGS ...`), until SIGTERM/SIGINT; the process exit status. The group
    logs as its first switch's options say; a switch that cannot start stops the group."""
    setup_logging(group[0])
    switches = [Switch(opts, alone=len(group) == 1) for opts in group]
    started = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        if not started:
            raise _Interrupted  # abandon a start-up that may take a while (compiling)
        for switch in switches:
            switch.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    begun: list[Switch] = []
    try:
        for switch in switches:
            begun.append(switch)
            switch.start()
        started = True
    except StartupError as exc:
        where = f"switch {len(begun)}: " if len(switches) > 1 else ""
        print(f"p4switch: {where}{exc}", file=sys.stderr)
        _close_all(begun)
        return 1
    except _Interrupted:
        started = True  # a second signal now only asks to stop
        _close_all(begun)
        return 0
    try:
        if not any(switch.stop_requested for switch in switches):  # a signal during start()
            dataplanes = [switch.dataplane for switch in switches
                          if switch.dataplane is not None]
            if len(dataplanes) == 1:
                # its own loop (in C, for CSwitchDataplane, without the interpreter: the
                # signal's byte on the wake pipe brings it back to run the handler)
                previous = signal.set_wakeup_fd(dataplanes[0].wake_fd)
                try:
                    dataplanes[0].run()
                finally:
                    signal.set_wakeup_fd(previous)
            else:
                run_dataplanes(dataplanes)
    finally:
        _close_all(switches)
    return 0


def _close_all(switches: Sequence[Switch]) -> None:
    for switch in switches:
        switch.close()


class _Interrupted(BaseException):  # not swallowed by `except Exception` on the way
    """SIGTERM/SIGINT during start-up."""
