"""The runtime CLI channel: `simple_switch_CLI` commands over a line protocol on loopback TCP.

Protocol (one request per line, one reply per line):
    client -> switch:  <command line>\\n           e.g. "set_queue_rate 100 2"
    switch -> client:  {"ok": true|false, "output": "<text>"}\\n

With a shared secret (p4switch --runtime-secret-file), a connection's first line must be
`auth <secret>`; anything else is refused and the connection closed. A line longer than
`MAX_LINE_BYTES` is refused unread; at most `MAX_CONNECTIONS` clients are served at once. Words
are split on whitespace (as BMv2's CLI does); `#` starts a comment.

Table, counter, meter, register, multicast and mirroring commands run through the runtime
state's interpreter (`p4switch.runtime.cli_commands.CliInterpreter`); queue and port commands run
against the traffic manager and ports (`SwitchCommands`). p4switch-only commands:
`queue_pause <port> <priority> <ms>`, `queue_resume <port> <priority>`,
`queue_stats <port> [<priority>]`, `port_status [<port>]`, `port_stats [<port> ...]` (frames
and bytes received/sent, send errors, frames the kernel dropped for a full socket buffer),
`pfc_watchdog <detection_ms> <restoration_ms> <drop|forward> [<poll_ms>]` | `pfc_watchdog off`,
`pfc_watchdog_stats` (the traffic manager's PFC watchdog, p4switch/switch/pfc_watchdog.py),
`pfc_hold <packets>` | `pfc_hold off` (hold the pauses it sent while its buffer holds their
port's traffic, p4switch/switch/pfc.py `PauseHold`).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import math
import socket
import threading
from collections.abc import Callable

from p4switch.runtime.cli_commands import READS
from p4switch.runtime.errors import RuntimeApiError
from p4switch.switch.device import Device
from p4switch.switch.pfc import PauseHold
from p4switch.switch.pfc_watchdog import WatchdogConfig
from p4switch.switch.tm import TrafficManager

log = logging.getLogger("p4switch.runtime_cli")
MAX_LINE_BYTES = 64 * 1024
MAX_CONNECTIONS = 32
AUTH_TIMEOUT_S = 5.0  # a connection that has not sent its secret by then is closed
MAX_INT_ARG = (1 << 31) - 1  # counts, ports, milliseconds: BMv2's thrift i32
MAX_RATE_PPS = 1e12


class CommandError(Exception):
    """A runtime command was rejected; the message says why."""


def _int(text: str, what: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise CommandError(f"{what} must be an integer, got {_shown(text)}") from None
    if not 0 <= value <= MAX_INT_ARG:
        raise CommandError(f"{what} must be in 0..{MAX_INT_ARG}, got {_shown(text)}")
    return value


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"


def command_words(line: str) -> list[str]:
    """The words of a command line up to a comment; linear in its length."""
    words = line.split()
    for i, word in enumerate(words):
        if word.startswith("#"):
            return words[:i]
    return words


class SwitchCommands:
    """Queue and port commands; also the `tm_hooks` given to the runtime interpreter."""

    def __init__(self, tm: TrafficManager, interfaces: dict[int, str],
                 port_up: Callable[[int], bool], elapsed_us: Callable[[], int],
                 port_counters: Callable[[int], dict[str, int]] | None = None,
                 pause_hold: PauseHold | None = None):
        self.tm = tm
        self.pause_hold = pause_hold
        self.port_counters = port_counters
        self.elapsed_us = elapsed_us
        self.interfaces = interfaces
        self.port_up = port_up

    # hooks API --------------------------------------------------------------------------
    def set_queue_depth(self, depth: int, port: int | None = None,
                        prio: int | None = None) -> None:
        if not 0 <= depth <= MAX_INT_ARG:
            raise RuntimeApiError("INVALID_ARGUMENT", f"queue depth must be in 0..{MAX_INT_ARG} "
                                  f"packets, got {depth}")
        try:
            self.tm.set_queue_depth(depth, port, prio)
        except ValueError as exc:
            raise RuntimeApiError("INVALID_ARGUMENT", str(exc)) from None

    def set_queue_rate(self, rate_pps: float, port: int | None = None,
                       prio: int | None = None) -> None:
        if not (math.isfinite(rate_pps) and 0 <= rate_pps <= MAX_RATE_PPS):
            raise RuntimeApiError("INVALID_ARGUMENT", f"queue rate must be in 0..{MAX_RATE_PPS:g} "
                                  f"packets/s, got {rate_pps}")
        try:
            self.tm.set_queue_rate(rate_pps, port, prio)
        except ValueError as exc:
            raise RuntimeApiError("INVALID_ARGUMENT", str(exc)) from None

    def time_elapsed_us(self) -> int:
        return self.elapsed_us()

    def ports(self) -> list[tuple[int, str, bool]]:
        """(port, interface, up) for every port."""
        return [(p, name, self.port_up(p)) for p, name in sorted(self.interfaces.items())]

    # commands ----------------------------------------------------------------------------
    NAMES = ("set_queue_depth", "set_queue_rate", "show_ports", "port_status",
             "queue_pause", "queue_resume", "queue_stats", "port_stats", "pfc_watchdog",
             "pfc_watchdog_stats", "pfc_hold")
    # handled here only while no program is loaded (else by the runtime interpreter)
    INTERPRETER_FIRST = ("set_queue_depth", "set_queue_rate")

    def execute(self, argv: list[str]) -> str:
        cmd, args = argv[0], argv[1:]
        if cmd in ("set_queue_depth", "set_queue_rate"):
            if not 1 <= len(args) <= 3:
                raise CommandError(f"usage: {cmd} <value> [<egress_port> [<priority>]]")
            if cmd == "set_queue_rate":
                try:
                    value: float = float(args[0])
                except ValueError:
                    raise CommandError(f"rate must be a number, got {_shown(args[0])}") from None
            else:
                value = _int(args[0], "depth")
            port = _int(args[1], "port") if len(args) > 1 else None
            prio = _int(args[2], "priority") if len(args) > 2 else None
            getattr(self, cmd)(value, port, prio)
            return ""
        if cmd in ("show_ports", "port_status"):
            rows = self.ports()
            if args:
                port = _int(args[0], "port")
                rows = [r for r in rows if r[0] == port]
                if not rows:
                    raise CommandError(f"no port {port}")
            # BMv2's show_ports layout
            lines = ["{:^10}{:^20}{:^10}{}".format("port #", "iface name", "status",
                                                   "extra info"), "=" * 50]
            lines += ["{:^10}{:^20}{:^10}{}".format(p, name, "UP" if up else "DOWN", "")
                      for p, name, up in rows]
            return "\n".join(lines)
        if cmd in ("queue_pause", "queue_resume", "queue_stats"):
            return self._queue_command(cmd, args)
        if cmd in ("pfc_watchdog", "pfc_watchdog_stats"):
            return self._watchdog_command(cmd, args)
        if cmd == "pfc_hold":
            if self.pause_hold is None or len(args) != 1:
                raise CommandError("usage: pfc_hold <packets> | pfc_hold off"
                                   if self.pause_hold is not None else "no pause hold here")
            try:
                self.pause_hold.set_threshold(
                    None if args[0] == "off" else _int(args[0], "threshold (packets)"))
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            return ""
        if cmd == "port_stats":
            ports = [_int(a, "port") for a in args] or sorted(self.interfaces)
            lines = []
            for port in ports:
                if port not in self.interfaces or self.port_counters is None:
                    raise CommandError(f"no port {port}")
                counts = " ".join(f"{k} {v}" for k, v in self.port_counters(port).items())
                lines.append(f"port {port} ({self.interfaces[port]}): {counts}")
            return "\n".join(lines)
        raise CommandError(f"unknown command {cmd!r}")

    def _queue_command(self, cmd: str, args: list[str]) -> str:
        want = {"queue_pause": 3, "queue_resume": 2, "queue_stats": 1}[cmd]
        if len(args) < want or len(args) > max(want, 2):
            usage = {"queue_pause": "<port> <priority> <ms>", "queue_resume": "<port> <priority>",
                     "queue_stats": "<port> [<priority>]"}[cmd]
            raise CommandError(f"usage: {cmd} {usage}")
        port = _int(args[0], "port")
        prio = _int(args[1], "priority") if len(args) > 1 else 0
        try:
            if cmd == "queue_pause":
                self.tm.pause(port, prio, _int(args[2], "duration (ms)") / 1000.0)
                return ""
            if cmd == "queue_resume":
                self.tm.resume(port, prio)
                return ""
            s = self.tm.stats(port, prio)
            return (f"port {port} priority {prio}: depth {self.tm.depth(port, prio)} "
                    f"enqueued {s.enqueued} dequeued {s.dequeued} dropped {s.dropped} "
                    f"paused {self.tm.is_paused(port, prio)}")
        except ValueError as exc:
            raise CommandError(str(exc)) from None


    def _watchdog_command(self, cmd: str, args: list[str]) -> str:
        if cmd == "pfc_watchdog_stats":
            return self.tm.watchdog_report()
        if args == ["off"]:
            self.tm.set_watchdog(None)
            return ""
        if len(args) not in (3, 4):
            raise CommandError("usage: pfc_watchdog <detection_ms> <restoration_ms> "
                               "<drop|forward> [<poll_ms>] | pfc_watchdog off")
        try:
            config = WatchdogConfig(_int(args[0], "detection (ms)") / 1000,
                                    _int(args[1], "restoration (ms)") / 1000, args[2],
                                    _int(args[3], "poll (ms)") / 1000 if len(args) > 3 else 0.0)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        try:
            self.tm.set_watchdog(config)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        return ""


class RuntimeCommandServer:
    """Serves runtime commands on 127.0.0.1:<port>, one thread per client connection (at most
    MAX_CONNECTIONS); with `secret`, only to clients that send `auth <secret>` first."""

    def __init__(self, device: Device, switch_commands: SwitchCommands, port: int,
                 host: str = "127.0.0.1", secret: bytes | None = None):
        self.device = device
        self.switch_commands = switch_commands
        self.secret = secret
        self._interp = None
        self._interp_generation = -1
        self.sock = socket.create_server((host, port), reuse_port=False)
        self.port = self.sock.getsockname()[1]
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()

    def start(self) -> None:
        t = threading.Thread(target=self._accept_loop, name="runtime-cli", daemon=True)
        t.start()
        self._threads.append(t)

    def execute(self, line: str) -> str:
        """Run one command line; raises CommandError (or the interpreter's error)."""
        argv = command_words(line)
        if not argv:
            return ""
        with self.device.lock:
            if argv[0] == "show_pipeline":  # which pipeline runs the program (device.py)
                engine = self.device.engine
                return "no program" if engine is None else str(engine.pipeline)
            if argv[0] in READS or argv[0] in SwitchCommands.NAMES:
                # the switch's own commands act on queues and ports, never the runtime state
                self.device.publish()  # what the control plane reads made current
            else:
                self.device.note_write()  # reads current, and a copy of the state renewed
            interp = self._interpreter()
            if argv[0] in SwitchCommands.NAMES and (
                    interp is None or argv[0] not in SwitchCommands.INTERPRETER_FIRST):
                return self.switch_commands.execute(argv)
            if interp is None:
                raise CommandError(f"{argv[0]}: no P4 program is loaded")
            output = interp.execute(" ".join(argv)) or ""
            if interp.failed:
                raise CommandError(output)
            return output

    def _interpreter(self):
        if self.device.state is None:
            return None
        if self._interp_generation != self.device.generation:
            from p4switch.runtime.cli_commands import CliInterpreter

            self._interp = CliInterpreter(self.device.state, self.switch_commands)
            self._interp_generation = self.device.generation
        return self._interp

    def _accept_loop(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._conns_lock:
                admitted = len(self._conns) < MAX_CONNECTIONS
                if admitted:
                    self._conns.add(conn)
            if not admitted:
                with conn, contextlib.suppress(OSError):
                    conn.sendall(_encode(False, f"too many runtime CLI connections (at most "
                                                f"{MAX_CONNECTIONS}); try again later"))
                    conn.shutdown(socket.SHUT_WR)
                continue
            threading.Thread(target=self._serve, args=(conn,), name="runtime-cli-conn",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        authenticated = self.secret is None
        if not authenticated:
            conn.settimeout(AUTH_TIMEOUT_S)
        try:
            with conn, conn.makefile("rwb") as f:
                while True:
                    raw = f.readline(MAX_LINE_BYTES + 1)
                    if not raw:
                        return
                    if len(raw) > MAX_LINE_BYTES:
                        f.write(_encode(False, f"command line longer than {MAX_LINE_BYTES} "
                                               "bytes: refused"))
                        f.flush()
                        if not _skip_line(f):
                            return
                        continue
                    line = raw.decode("utf-8", "replace").strip()
                    if not authenticated:
                        authenticated = self._authenticate(line)
                        f.write(_encode(authenticated, "authenticated" if authenticated else
                                        "authentication failed: this switch needs 'auth "
                                        "<secret>' as the first line (--runtime-secret-file)"))
                        f.flush()
                        if not authenticated:
                            return
                        conn.settimeout(None)
                        continue
                    reply = self._reply(line)
                    f.write(json.dumps(reply).encode() + b"\n")
                    f.flush()
        except OSError:
            pass
        finally:
            with self._conns_lock:
                self._conns.discard(conn)

    def _authenticate(self, line: str) -> bool:
        assert self.secret is not None
        words = line.split()
        given = words[1].encode() if len(words) == 2 and words[0] == "auth" else b""
        return hmac.compare_digest(given, self.secret)

    def _reply(self, line: str) -> dict:
        try:
            return {"ok": True, "output": self.execute(line)}
        except (CommandError, RuntimeApiError) as exc:
            return {"ok": False, "output": str(exc)}
        except Exception as exc:  # a bug must not take the channel down: report it
            log.exception("runtime command %r failed", line)
            return {"ok": False, "output": f"internal error: {type(exc).__name__}: {exc}"}

    def close(self) -> None:
        self._stopping = True
        self.sock.close()
        with self._conns_lock:
            for c in self._conns:
                with contextlib.suppress(OSError):
                    c.shutdown(socket.SHUT_RDWR)


def _encode(ok: bool, output: str) -> bytes:
    return json.dumps({"ok": ok, "output": output}).encode() + b"\n"


def _skip_line(f) -> bool:
    """Read past the rest of an over-long line without keeping it; False at end of stream."""
    while True:
        chunk = f.readline(MAX_LINE_BYTES)
        if not chunk:
            return False
        if chunk.endswith(b"\n"):
            return True
