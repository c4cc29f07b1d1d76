"""One switch of each target on its own veth pairs, programmed by the project's controller.

A `Rig` runs one switch process (p4switch or BMv2's `simple_switch_grpc`, argv from
`targets`) whose P4 ports are veth ends in the root namespace, named after the
test process (`d<pid><target letter><port>`, the far end `...x`), so parallel runs never meet.
The controller (`controller.fabric.FabricController`, `controller.lb.LoadBalancing`) programs it
as switch `leaf0` of a two-leaf fabric with two spines (or more): port 1 faces host NIC h0n0
(10.0.0.1), ports 2, 3 (, 4 ...) the spines, so the route to h1n0 (10.0.1.1) is an ECMP group of
those ports. Frames
are sent and captured with AF_PACKET sockets on the far ends. p4switch runs a lab program's
native pipeline (`--pipeline native`, built before the switch starts; p4switch/native.py), the
pipeline a lab's switches run; a test's own program, the switch's default.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from controller.fabric import FabricController
from controller.lb import LoadBalancing
from controller.pipeline import Pipeline, build_pipeline
from mechanisms import MechanismError, program_path
from targets import get_target
from tests.ports import loose_port
from topos import FabricSpec, build_fabric
from topos.mininet.procs import accepts, spawn

LEAF = "leaf0"
ETH_P_ALL = 0x0003
PACKET_IGNORE_OUTGOING = 23
SOL_PACKET = 263


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


def _sysctl(setting: str) -> None:
    subprocess.run(["sysctl", "-qw", setting], check=True, capture_output=True)


@cache
def pipeline(program: str, target: str) -> Pipeline:
    """`p4src/<program>.p4` compiled for `target` (once per test session); for p4switch, its
    native pipeline built (kept, so the switch loads it when the pipeline is pushed)."""
    if target == "p4switch":
        from p4switch.compiler import compile_program
        from p4switch.native import native_module

        native_module(compile_program(program_path(program)).native_source, program)
    return build_pipeline(program_path(program), target)


def fabric(spines: int = 2) -> FabricSpec:
    return build_fabric("leafspine", leaves=2, spines=spines, hosts_per_leaf=1)


@dataclass
class Rig:
    """One running switch, its veth pairs and capture sockets, and its controller."""

    target: str
    program: str
    tag: str
    log: Path
    ports: dict[int, str] = field(default_factory=dict)  # P4 port -> switch-side interface
    peers: dict[int, str] = field(default_factory=dict)  # P4 port -> far end (ours)
    socks: dict[int, socket.socket] = field(default_factory=dict)
    spines: int = 2  # leaf0's ports: 1 (host) and 2 .. spines + 1
    priority_queues: int = 0  # 0: the target's default (one queue per port)
    pfc_at_port: bool = True  # honour received PFC frames in its queues (where they can pause)
    proc: subprocess.Popen | None = None
    ctl: FabricController | None = None
    lb: LoadBalancing | None = None
    last_counters: dict[str, dict[int, tuple[int, int]]] | None = None  # at the end of the last case

    # ---- interfaces ----------------------------------------------------------------------
    def make_links(self) -> None:
        for port in range(1, self.spines + 2):
            sw, peer = f"{self.tag}{port}", f"{self.tag}{port}x"
            # a killed run with the same pid may have left the pair behind
            subprocess.run(["ip", "link", "del", sw], capture_output=True, check=False)
            _ip("link", "add", sw, "type", "veth", "peer", "name", peer)
            self.ports[port], self.peers[port] = sw, peer
            for intf in (sw, peer):
                _sysctl(f"net.ipv6.conf.{intf}.disable_ipv6=1")
                _ip("link", "set", intf, "up")
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            sock.bind((peer, ETH_P_ALL))
            sock.setblocking(False)
            self.socks[port] = sock

    def set_link(self, port: int, up: bool) -> None:
        """Take the link at `port` down or up by its far end, as a pulled cable or a failed
        neighbour does: the switch's interface stays administratively up and loses carrier."""
        _ip("link", "set", self.peers[port], "up" if up else "down")

    def set_port_admin(self, port: int, up: bool) -> None:
        """Set the switch's own interface of `port` administratively up or down."""
        _ip("link", "set", self.ports[port], "up" if up else "down")

    def remove_links(self) -> None:
        for sock in self.socks.values():
            sock.close()
        for intf in self.ports.values():
            subprocess.run(["ip", "link", "del", intf], capture_output=True, check=False)

    # ---- the switch ----------------------------------------------------------------------
    def start(self, spec: FabricSpec, timeout: float = 30.0) -> None:
        """Start the switch as `leaf0` of `spec` (whose management ports are replaced)."""
        model = replace(spec.switch(LEAF), grpc_port=loose_port(), thrift_port=loose_port())
        spec.switches = [model if sw.name == LEAF else sw for sw in spec.switches]
        target = get_target(self.target)
        if self.target == "p4switch":
            try:
                pipeline(self.program, self.target)  # a lab program: its native pipeline built
            except MechanismError:
                pass  # a test's own program (pushed by the test): the switch's default
            else:
                target = target.with_options("--pipeline", "native")
        if not self.pfc_at_port:
            target = target.without_queue_pause()
        argv = target.argv(model, self.ports)
        if self.priority_queues:  # a target option, after `--` on both targets
            argv += ["--priority-queues", str(self.priority_queues)]
        with open(self.log, "wb") as log:
            self.proc = spawn(argv, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive("starting")
            if accepts(model.grpc_port):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.target}: gRPC not ready after {timeout} s")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.05)

    def check_alive(self, doing: str) -> None:
        """Raise, with the end of the switch's log, if the switch process has exited."""
        if self.proc is not None and self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.target} exited with {self.proc.returncode} while "
                               f"{doing}:\n{tail}")

    def program_switch(self, spec: FabricSpec, flowlet_gap_us: int | None) -> None:
        """Routes through the controller, then the load-balancing knobs of the program."""
        self.ctl = FabricController(spec, pipeline(self.program, self.target))
        self.ctl.connect([LEAF])
        self.ctl.program()
        self.lb = LoadBalancing(self.ctl)
        self.lb.configure(flowlet_gap_us if self.program == "flowlet" else None)

    def stop(self) -> None:
        if self.ctl is not None:
            self.ctl.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    # ---- state ---------------------------------------------------------------------------
    def counters(self) -> dict[str, dict[int, tuple[int, int]]]:
        """Every counter of the program, non-zero cells only, read over P4Runtime."""
        assert self.ctl is not None
        names = {c.preamble.id: c.preamble.name for c in self.ctl.pipeline.p4info.counters}
        cells = self.ctl.clients[LEAF].read_counters(names)
        return {names[cid]: {i: v for i, v in cells[cid].items() if v != (0, 0)} for cid in names}

    def drain(self) -> None:
        """Discard whatever the capture sockets hold."""
        for sock in self.socks.values():
            with contextlib.suppress(BlockingIOError, OSError):
                while True:
                    sock.recv(65536)


@contextlib.contextmanager
def rig(target: str, program: str, workdir: Path, *, flowlet_gap_us: int | None = None,
        spines: int = 2, priority_queues: int = 0, pfc_at_port: bool = True) -> Iterator[Rig]:
    """A programmed switch of `target` running `program`; everything removed on exit."""
    letter = target[0]
    tag = f"d{os.getpid() % 100000}{letter}"
    r = Rig(target, program, tag, workdir / f"{target}-{program}.log",
            spines=spines, priority_queues=priority_queues, pfc_at_port=pfc_at_port)
    try:
        r.make_links()
        spec = fabric(r.spines)
        r.start(spec)
        r.program_switch(spec, flowlet_gap_us)
        r.drain()
        yield r
    finally:
        r.stop()
        r.remove_links()


Emitted = list[tuple[int, bytes]]  # (egress port, frame) in arrival order


# The frame tests run beside the tests that start networks (their own xdist group): on a machine
# that busy a switch may answer late, so what a frame may still bring is awaited this long.
QUIET_S = 1.0


def exchange(rigs: list[Rig], port: int, frames: list[bytes],
             quiet: float = QUIET_S) -> list[Emitted]:
    """Send `frames` one after the other into `port` of every rig (the same frame to all rigs
    at once) and collect what each rig emits. One list per rig; see `inject` for the timing."""
    return inject(rigs, [lambda r, f=frame: r.socks[port].send(f) for frame in frames], quiet)


SETTLED = 0.05  # s of silence after every rig answered a frame: the next frame may go


def inject(rigs: list[Rig], sends: list[Callable[[Rig], object]],
           quiet: float = QUIET_S) -> list[Emitted]:
    """`exchange` with any way of sending: each of `sends` is called with every rig in turn.

    The next send waits until every rig has emitted something for this one and then nothing
    for `SETTLED` seconds, or, when a rig emits nothing (a drop), until no rig has emitted
    anything for `quiet` seconds. After the last send it always waits `quiet`, so a late extra
    frame is still collected."""
    out: list[Emitted] = [[] for _ in rigs]
    where = {sock.fileno(): (i, p) for i, r in enumerate(rigs) for p, sock in r.socks.items()}
    socks = {sock.fileno(): sock for r in rigs for sock in r.socks.values()}
    for n, send in enumerate(sends):
        for r in rigs:
            send(r)
        last = time.monotonic()
        before = [len(o) for o in out]
        final = n == len(sends) - 1
        while True:
            answered = not final and all(len(o) > b for o, b in zip(out, before, strict=True))
            left = last + (SETTLED if answered else quiet) - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(list(socks), [], [], left)
            for fd in ready:
                index, egress = where[fd]
                try:
                    while True:
                        out[index].append((egress, socks[fd].recv(65536)))
                        last = time.monotonic()
                except BlockingIOError:
                    pass
                except OSError as err:  # the link went down under the socket
                    if err.errno != errno.ENETDOWN:
                        raise
    return out
