"""Paced RoCEv2 flows running in a fabric's hosts, seen live: the controller side of
`python -m traffic paced` (`traffic.paced`).

    run = FlowRun(flows, time.time(), bin_s=0.01)
    run.attach("recv", host.popen(paced_argv("recv", ...)), ip_of)   # one process per NIC
    run.wait_ready()
    ...
    run.snapshot()          # flow name -> bin -> bytes, while they run
    run.stop()              # senders, then receivers; run.results: per-flow receiver records

`FailoverLab.start_flows` and `trace_paths` (`experiments.framework.failover_lab`) start them.
"""

from __future__ import annotations

import contextlib
import json
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from topos.mininet.procs import stop_child
from traffic.hosts import python_argv


@dataclass(frozen=True)
class Flow:
    src: str  # NIC names
    dst: str
    dst_ip: str
    qpn: int
    sport: int

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst}#{self.qpn}"


def paced_argv(role: str, *args: str) -> list[str]:
    """argv of one `traffic paced` process (`send`, `recv` or `trace`)."""
    return python_argv("traffic", "paced", role, *args)


def read_lines(proc: subprocess.Popen, on_line) -> threading.Thread:
    stdout = proc.stdout
    assert stdout is not None  # our workers: stdout=PIPE

    def pump() -> None:
        for line in stdout:
            try:
                on_line(json.loads(line))
            except ValueError:
                continue
    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def expect_event(proc: subprocess.Popen, event: str, timeout: float = 20.0) -> dict:
    """The next JSON line of `proc` (one of our workers), which must be `event`."""
    assert proc.stdout is not None and proc.stderr is not None  # our workers: both pipes
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    try:
        msg = json.loads(line) if line else {}
    except ValueError:
        msg = {}
    if msg.get("event") != event:
        if not line:  # silent or gone: what it said on stderr
            proc.kill()
            line = proc.stderr.read()
        close_worker(proc)
        raise RuntimeError(f"flow worker (pid {proc.pid}) did not say {event!r}: "
                           f"{line.strip()[-500:]}")
    return msg


def close_worker(proc: subprocess.Popen) -> None:
    """End a worker that reads stdin: EOF first, then SIGTERM, then SIGKILL."""
    if proc.stdin and not proc.stdin.closed:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    stop_child(proc, 2.0, group=False)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


@dataclass
class FlowRun:
    """Flows running: live bins per flow while they run, receiver records once stopped."""

    flows: list[Flow]
    t0: float
    bin_s: float
    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)  # (role, proc)
    bins: dict[str, dict[int, int]] = field(default_factory=dict)  # flow name -> bin -> bytes
    lossy_gaps: dict[str, list] = field(default_factory=dict)  # flow name -> gaps that lost
    results: dict[str, dict] = field(default_factory=dict)  # flow name -> receiver record
    sent: dict[str, dict] = field(default_factory=dict)  # flow name -> sender record
    lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)
    _ready: dict[int, threading.Event] = field(default_factory=dict)

    def _by_key(self, src_ip_of: dict[str, str]) -> dict[str, Flow]:
        return {f"{src_ip_of[f.src]}/{f.qpn}": f for f in self.flows}

    def attach(self, role: str, proc: subprocess.Popen, src_ip_of: dict[str, str]) -> None:
        keys = self._by_key(src_ip_of)
        ready = self._ready[proc.pid] = threading.Event()

        def on_line(msg: dict) -> None:
            event = msg.get("event")
            if event == "ready":
                ready.set()
            elif event == "bins":
                with self.lock:
                    for key, cells in msg["flows"].items():
                        if key in keys:
                            series = self.bins.setdefault(keys[key].name, {})
                            series.update({int(i): n for i, n in cells})
                    for key, gaps in msg.get("lossy_gaps", {}).items():
                        if key in keys:
                            self.lossy_gaps.setdefault(keys[key].name, []).extend(gaps)
            elif event == "result" and role == "recv":
                for rec in msg["flows"]:
                    flow = keys.get(f"{rec['src']}/{rec['qpn']}")
                    if flow:
                        self.results[flow.name] = rec
            elif event == "result":
                by_qp = {(f.dst_ip, f.qpn): f for f in self.flows}
                for rec in msg["flows"]:
                    flow = by_qp.get((rec["dst"], rec["qpn"]))
                    if flow:
                        self.sent[flow.name] = rec
        self.procs.append((role, proc))
        self._threads.append(read_lines(proc, on_line))

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        for (role, proc), event in zip(self.procs, self._ready.values(), strict=True):
            if not event.wait(max(0.0, deadline - time.monotonic())):
                proc.kill()
                proc.wait()  # stdout belongs to the reader thread; stderr is ours
                assert proc.stderr is not None  # our workers: stderr=PIPE
                raise RuntimeError(f"flow {role}er (pid {proc.pid}) did not start: "
                                   f"{proc.stderr.read().strip()[-500:]}")

    def snapshot(self) -> dict[str, dict[int, int]]:
        with self.lock:
            return {name: dict(series) for name, series in self.bins.items()}

    def stop(self, drain_s: float = 0.3) -> None:
        """Senders first, then (after in-flight packets arrive) receivers; collect results."""
        for role in ("send", "recv"):
            for r, proc in self.procs:
                if r == role and proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for r, proc in self.procs:
                if r == role:
                    try:
                        proc.wait(10)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
            if role == "send":
                time.sleep(drain_s)  # packets still in the switches' queues
        for thread in self._threads:
            thread.join(5)
        for _role, proc in self.procs:
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()

    def __enter__(self) -> FlowRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
