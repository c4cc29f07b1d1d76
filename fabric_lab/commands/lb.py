"""`fabric-lab lb --mode MODE`: choose the load-balancing mode of a running fabric.

When the running program already has the mode's mechanism (your own flowlet_lab.p4 has a flowlet
gap), only the knobs change: the flowlet gap, or the host-facing ports where DLB adds reorder
tags. Otherwise it runs the mode's program (p4src/ecmp.p4, flowlet.p4, dlb.p4 or qdlb.p4) on every
switch (a push resets the switch: routes are rewritten at once), but only in place of another of
those: a program of your own is never replaced (the command refuses and says so). Prints what every
switch holds afterwards.

A fabric brought up with `fabric-lab up FABRIC` keeps its controller connected as the switches'
primary. P4Runtime lets only the primary write, so a second controller would either be refused
(the same election id) or take the switches over (a higher one). The request is therefore handed
to the running controller through its socket in the run directory (/run/fabric-lab), which
switches the mode itself, keeping the links it knows to be down. With no controller running
(`fabric-lab up FABRIC --run CMD`, or `--direct`), this command connects to the switches itself;
the fabric then comes from --fabric, or from FABRIC_LAB_FABRIC (set by `up --run`).

    fabric-lab lb --mode dlb                                 # a running `fabric-lab up`
    fabric-lab up leafspine --run "fabric-lab lb --mode flowlet --flowlet-gap-us 20000"
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import targets
from controller.fabric import FabricController, ProgrammingError
from controller.lb import MODES, LbError, LoadBalancing, program_path
from controller.p4rt import P4RuntimeError
from controller.pipeline import PipelineError, build_pipeline
from fabric_lab.arguments import FLOWLET_GAP_US, number
from fabric_lab.commands.controller import load_fabric
from topos import FabricSpec, validate
from topos.filenames import file_part
from topos.mininet.runstate import run_dir
from topos.values import ELECTION_ID

SOCKET_SUFFIX = ".lb.sock"
REQUEST_TIMEOUT_S = 120.0  # a mode switch compiles the program and rewrites every switch


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lb", help="choose the load-balancing mode (and flowlet gap) of a running fabric",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--fabric", metavar="FILE.json|NAME",
                        help="fabric model (default: the running fabric, or $FABRIC_LAB_FABRIC)")
    parser.add_argument("--scale", nargs="+", action="extend", default=[], metavar="K=V",
                        help="scale parameters when --fabric is a name")
    parser.add_argument("--target", default="auto", choices=targets.CHOICES,
                        help="what the switches run, for the pipeline format (default: auto = p4switch)")
    parser.add_argument("--mode", required=True, choices=MODES, help="load-balancing mode")
    parser.add_argument("--flowlet-gap-us", type=number(FLOWLET_GAP_US), metavar="US",
                        help="flowlet gap in microseconds (flowlet mode; default 10000)")
    parser.add_argument("--direct", action="store_true",
                        help="connect to the switches directly even if a controller runs")
    parser.add_argument("--election-id", type=number(ELECTION_ID), default=1, metavar="N",
                        help="P4Runtime election id with --direct (low 64 bits; default 1)")
    parser.set_defaults(func=run)


# ---- the mode switch itself (shared by this command, the Mininet CLI and the socket) ---------
def held_lines(ctl: FabricController) -> list[str]:
    """What every switch holds: the running program and its knobs, read back."""
    lb = LoadBalancing(ctl)
    mode = lb.mode
    program = ctl.pipeline.program.name
    lines = [f"{program} on {len(ctl.clients)} switches"
             + ("" if program == f"{mode}.p4" else f" ({mode} mode)")]
    held: dict[str, Any] = (lb.flowlet_gaps() if mode == "flowlet"
                            else lb.tagging_ports() if mode in ("dlb", "qdlb") else {})
    for name in sorted(held):
        what = (f"flowlet gap {held[name]} us" if mode == "flowlet"
                else f"tags on ports {','.join(map(str, held[name])) or 'none'}")
        lines.append(f"  {name}: {what}")
    return lines


def switch_mode(ctl: FabricController, mode: str, flowlet_gap_us: int | None = None) -> list[str]:
    """Run `mode` on every switch of a connected controller (routes kept in line with the links
    it knows to be down), set its knobs, and return what the switches hold."""
    if flowlet_gap_us is not None and mode != "flowlet":
        raise LbError(f"a flowlet gap applies to mode flowlet, not {mode}")
    lb = LoadBalancing(ctl)
    running = lb.mode
    if running == mode:  # the program has the mechanism: only its knobs change
        lb.configure(flowlet_gap_us)
        return held_lines(ctl)
    program = ctl.pipeline.program
    if program.resolve() != program_path(running).resolve():
        raise LbError(refusal(program.name, running, mode))
    lb.switch_mode(mode, target=ctl.pipeline.target, flowlet_gap_us=flowlet_gap_us)
    return held_lines(ctl)


def refusal(program: str, running: str, mode: str) -> str:
    """Why `lb MODE` leaves a program that is not one of the lab's own alone."""
    return (f"the switches run {program} ({running} mode), which has no {mode} mechanism; lb "
            f"changes a program's knobs and never replaces your program. To watch "
            f"p4src/{mode}.p4 instead, bring the fabric up with --program p4src/{mode}.p4")


class LbServer:
    """Serves `fabric-lab lb` requests for a running controller on a Unix socket.

    One request per connection: a JSON line {"mode": ..., "flowlet_gap_us": ...} (mode null:
    only report), answered by {"ok": bool, "lines": [...], "error": str}. The socket is the
    owner's alone (mode 0600) and is removed on stop()."""

    def __init__(self, ctl: FabricController, *, directory: Path | None = None,
                 lock: threading.Lock | None = None) -> None:
        self.ctl = ctl
        self.lock = lock or threading.Lock()
        directory = directory or run_dir()
        self.path = directory / f"{file_part(ctl.spec.name)}-{os.getpid()}{SOCKET_SUFFIX}"
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def handle(self, mode: str | None, flowlet_gap_us: int | None) -> list[str]:
        """Switch (or, with mode None, report) under the lock shared with the CLI."""
        with self.lock:
            if mode is None:
                return held_lines(self.ctl)
            return switch_mode(self.ctl, mode, flowlet_gap_us)

    def start(self) -> LbServer:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(self.path))
        finally:
            os.umask(old)
        sock.listen(4)
        sock.settimeout(0.2)
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="lb-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sock is not None:
            self._sock.close()
        self.path.unlink(missing_ok=True)

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            with conn.makefile("rb") as reader:
                line = reader.readline()
            if not line:
                return  # a liveness probe (`servers()`), or a client gone before asking
            request = json.loads(line)
            mode = request.get("mode")
            gap = request.get("flowlet_gap_us")
            if mode is not None and mode not in MODES:
                raise LbError(f"unknown load-balancing mode {mode!r}")
            reply: dict[str, Any] = {"ok": True, "lines": self.handle(mode, gap)}
        except (ValueError, PipelineError, ProgrammingError, P4RuntimeError) as err:
            reply = {"ok": False, "lines": [], "error": str(err)}
        except OSError:
            return  # the client went away
        with contextlib.suppress(OSError):  # the client went away
            conn.sendall((json.dumps(reply) + "\n").encode())


def servers(directory: Path | None = None) -> list[Path]:
    """Sockets of running controllers that take `fabric-lab lb` requests. A socket nobody
    listens on (its `fabric-lab up` was killed hard) is left out."""
    directory = directory or run_dir()
    found = sorted(directory.glob(f"*{SOCKET_SUFFIX}")) if directory.is_dir() else []
    return [path for path in found if _listening(path)]


def _listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(str(path))
        except PermissionError:
            return True  # someone's, and alive: say so when asking it
        except OSError:
            return False
    return True


def send_request(path: Path, mode: str | None, flowlet_gap_us: int | None,
                 timeout: float = REQUEST_TIMEOUT_S) -> dict[str, Any]:
    """One request to a running controller; raises OSError when nobody answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall((json.dumps({"mode": mode, "flowlet_gap_us": flowlet_gap_us}) + "\n")
                     .encode())
        with sock.makefile("rb") as reader:
            line = reader.readline()
    if not line:
        raise ConnectionError(f"{path}: the controller closed the connection without answering")
    return json.loads(line)


# ---- the command ---------------------------------------------------------------------------
def _fabric(args: argparse.Namespace) -> FabricSpec:
    if args.fabric:
        return load_fabric(args.fabric, args.scale)
    where = os.environ.get("FABRIC_LAB_FABRIC")
    if not where:
        raise ValueError("no fabric: give --fabric, or run under `fabric-lab up --run` (no "
                         "running `fabric-lab up` takes requests)")
    if where.lstrip().startswith("{"):  # the model itself rather than a file holding it
        return validate(FabricSpec.from_json(where))
    return load_fabric(where, [])


def _running(args: argparse.Namespace) -> Path | None:
    """The socket of the running controller to ask, None to connect directly."""
    if args.direct or (os.environ.get("FABRIC_LAB_FABRIC") and not args.fabric):
        return None
    found = servers()
    if args.fabric:
        name = load_fabric(args.fabric, args.scale).name
        found = [p for p in found if p.name.rsplit("-", 1)[0] == name]
    if len(found) > 1:
        names = ", ".join(p.name.removesuffix(SOCKET_SUFFIX) for p in found)
        raise ValueError(f"several running fabrics take requests ({names}): name one with "
                         f"--fabric")
    return found[0] if found else None


def _print(lines: list[str], out: Callable[[str], None] = print) -> None:
    for line in lines:
        out(line)


def run(args: argparse.Namespace) -> int:
    if args.flowlet_gap_us is not None and args.mode != "flowlet":
        print(f"fabric-lab lb: --flowlet-gap-us applies to mode flowlet, not {args.mode}",
              file=sys.stderr)
        return 2
    try:
        path = _running(args)
    except ValueError as err:
        print(f"fabric-lab lb: {err}", file=sys.stderr)
        return 2
    if path is not None:
        try:
            reply = send_request(path, args.mode, args.flowlet_gap_us)
        except PermissionError:
            print(f"fabric-lab lb: {path} belongs to the root running `fabric-lab up`: run "
                  f"this with sudo", file=sys.stderr)
            return 1
        except OSError as err:
            print(f"fabric-lab lb: the controller at {path} did not answer ({err}); "
                  f"use --direct if it is gone", file=sys.stderr)
            return 1
        if not reply.get("ok"):
            print(f"fabric-lab lb: {reply.get('error')}", file=sys.stderr)
            return 1
        print(f"(switched by the running controller, {path.name})")
        _print(reply["lines"])
        return 0
    return _direct(args)


def _keep_other_programs(ctl: FabricController, mode: str) -> None:
    """LbError when a switch runs a program that is not one of the lab's mode programs (a
    student's): --direct only switches between p4src/ecmp.p4, flowlet.p4, dlb.p4 and qdlb.p4."""
    from p4.v1 import p4runtime_pb2

    from controller.lb import mode_of
    from controller.schema import Schema

    lab = {build_pipeline(program_path(mode), ctl.pipeline.target).cookie}
    for name, client in sorted(ctl.clients.items()):
        config = client.pipeline(
            p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        if config is None or not config.HasField("p4info") or config.cookie.cookie in lab:
            continue
        running = mode_of(Schema(config.p4info))
        if config.cookie.cookie != build_pipeline(program_path(running),
                                                  ctl.pipeline.target).cookie:
            raise LbError(refusal(f"a program of your own on {name}", running, mode)
                          + " (or change its knobs from the `fabric-lab up` CLI: lb "
                          + running + ")")
        lab.add(config.cookie.cookie)


def _direct(args: argparse.Namespace) -> int:
    try:
        spec = _fabric(args)
        pipeline = build_pipeline(program_path(args.mode), args.target)
        with FabricController(spec, pipeline, election_id=(0, args.election_id)) as ctl:
            ctl.connect()
            _keep_other_programs(ctl, args.mode)
            pushed = sum(r.pipeline_pushed for r in ctl.program())
            LoadBalancing(ctl).configure(args.flowlet_gap_us)
            lines = held_lines(ctl)
    except (P4RuntimeError, ProgrammingError) as err:
        hint = ("\n(another controller is primary on the switches: P4Runtime lets only the "
                "primary write. Give the mode in its `fabric-lab up` CLI with `lb MODE`, run "
                "this command without --direct so that controller switches, or stop it first.)"
                if "arbitration failed" in str(err) else "")
        print(f"fabric-lab lb: {err}{hint}", file=sys.stderr)
        return 1
    except (ValueError, PipelineError, LbError) as err:
        print(f"fabric-lab lb: {err}", file=sys.stderr)
        return 1
    lines[0] += f" ({pushed} pushed)"
    _print(lines)
    return 0
