"""Soak: HPN 7.0 up for a long time with everything happening at once; fails on steady growth of
any process or on a link event the controller did not see.

    sudo .venv/bin/python bench/soak.py [--minutes 30] [--quick] [--target p4switch|bmv2]
        [--clients 4] [--cycle 20] [--sample 60]

The fabric is brought up as `fabric-lab up hpn7 --web` does (this process is the controller
and the web server). Meanwhile: ping flows between NIC pairs across the fabric; every `--cycle`
seconds a link between switches (the next one in turn) is failed, and restored half a cycle
later, each change waited for in the controller's reconvergence events (a change it did not
record within 5 s is a lost event); after each restore the load-balancing mode changes (ecmp <->
flowlet: a pipeline push to every switch) or the controller re-pushes the pipeline and routes;
`--clients` web clients read the view's live stream the whole time. Every `--sample` seconds
the RSS, open file descriptors and threads of every switch process and of this process
(controller + web server) are printed. Growth: a metric whose value over the second half of the
run stays above the maximum of the first half (after one warm-up sample) by more than a margin
(RSS 10 % + 5 MB, fds 8, threads 8). `--quick`: 2 minutes, a cycle every 10 s, a sample every
15 s.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.lb import LoadBalancing
from experiments.framework.session import FabricSession
from fabric_lab.commands.lb import LbServer
from fabric_lab.web import up_view
from mechanisms import program_path
from topos import build_fabric
from topos.mininet.failures import link_name, set_link
from topos.model import FabricSpec, Link

MARGIN = {"rss_mb": (1.10, 5.0), "fds": (1.0, 8), "threads": (1.0, 8)}  # (factor, plus)
EVENT_TIMEOUT_S = 5.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def usage(pid: int) -> dict[str, float]:
    """RSS (MB), open file descriptors and threads of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return {"rss_mb": rss, "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": threads}


class WebClient(threading.Thread):
    """Reads the view's server-sent events (`url`: the stream's, with the token) until stopped;
    reconnects if the stream ends."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.messages, self.errors = url, 0, 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=10) as stream:
                    for line in stream:
                        if line.startswith(b"data: "):
                            self.messages += 1
                        if self.stopping.is_set():
                            return
            except OSError:
                self.errors += 1
                self.stopping.wait(1.0)


@dataclass
class Tally:
    failed: int = 0
    restored: int = 0
    lost: list[str] = field(default_factory=list)
    lb_changes: int = 0
    pushes: int = 0
    samples: dict[str, list[dict[str, float]]] = field(default_factory=dict)


def wait_event(events: Callable[[], list], link: Link, up: bool, since: float) -> bool:
    name = link_name(link)
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    while time.monotonic() < deadline:
        if any(e.link == name and e.up == up and e.seen >= since for e in events()):
            return True
        time.sleep(0.05)
    return False


def start_flows(session: FabricSession, spec: FabricSpec, count: int) -> list[subprocess.Popen]:
    """Ping flows (5 per second) from the first NICs to the last ones."""
    nics = spec.host_nics()
    pairs = list(zip(nics[:count], reversed(nics[-count:]), strict=True))
    return [session.host(a.name).popen(["ping", "-q", "-i", "0.2", b.ip],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for a, b in pairs if a.name != b.name]


def flow_loss(procs: list[subprocess.Popen]) -> str:
    sent = received = 0
    for proc in procs:
        proc.send_signal(signal.SIGINT)  # ping prints its statistics and exits
        out, _ = proc.communicate(timeout=10)
        found = re.search(rb"(\d+) packets transmitted, (\d+) received", out or b"")
        if found:
            sent, received = sent + int(found.group(1)), received + int(found.group(2))
    return f"{received}/{sent} pings answered"


def grown(values: list[float], metric: str) -> bool:
    """The second half stays above the first half's maximum by more than the margin."""
    body = values[1:]  # the first sample is the warm-up
    if len(body) < 4:
        return False
    half = len(body) // 2
    factor, plus = MARGIN[metric]
    return min(body[half:]) > max(body[:half]) * factor + plus


def sample(session: FabricSession, spec: FabricSpec, tally: Tally, elapsed: float) -> None:
    pids = {sw.name: session.net.switch(sw.name).proc.pid for sw in spec.switches}
    pids["controller+web"] = os.getpid()
    for name, pid in pids.items():
        tally.samples.setdefault(name, []).append(usage(pid))
    switches = [tally.samples[sw.name][-1] for sw in spec.switches]
    own = tally.samples["controller+web"][-1]
    print(f"t={elapsed:6.0f} s  switches: RSS max {max(s['rss_mb'] for s in switches):6.1f} MB "
          f"sum {sum(s['rss_mb'] for s in switches):7.1f} MB, fds max "
          f"{max(s['fds'] for s in switches):3.0f}, threads max "
          f"{max(s['threads'] for s in switches):3.0f} | controller+web: RSS "
          f"{own['rss_mb']:6.1f} MB, fds {own['fds']:3.0f}, threads {own['threads']:3.0f} | "
          f"links failed {tally.failed}, restored {tally.restored}, lost events "
          f"{len(tally.lost)}, lb changes {tally.lb_changes}, pushes {tally.pushes}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--quick", action="store_true", help="2 minutes, cycle 10 s, sample 15 s")
    ap.add_argument("--target", default="p4switch")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--flows", type=int, default=4)
    ap.add_argument("--cycle", type=float, default=20.0)
    ap.add_argument("--sample", type=float, default=60.0)
    args = ap.parse_args()
    if args.quick:
        args.minutes, args.cycle, args.sample = 2.0, 10.0, 15.0

    spec = build_fabric("hpn7")
    links = [ln for ln in spec.links if spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)]
    session = FabricSession(spec, program=program_path("ecmp"), target=args.target, setup={
        "load-balancing knobs": lambda s: LoadBalancing(s.connected()).configure(None)})
    tally = Tally()
    started = time.monotonic()
    with session:
        print(f"hpn7 up on {args.target} in {time.monotonic() - started:.1f} s: "
              f"{len(spec.switches)} switches, {len(links)} switch links", flush=True)
        session.start_loops(reconverge=True, probes=True)
        ctl, rc, prober = session.connected(), session.rc, session.prober
        assert rc is not None and prober is not None
        lb = LbServer(ctl)
        with up_view(spec, ctl, rc, prober, port=free_port(), lb=lb.handle,
                     out=sys.stderr) as server:
            clients = [WebClient(server.url_for("api/stream")) for _ in range(args.clients)]
            for client in clients:
                client.start()
            flows = start_flows(session, spec, args.flows)
            t0 = time.monotonic()
            end, next_sample, cycle = t0 + args.minutes * 60, t0, 0
            modes = ["flowlet", "ecmp"]
            while time.monotonic() < end:
                if time.monotonic() >= next_sample:
                    sample(session, spec, tally, time.monotonic() - t0)
                    next_sample += args.sample
                link = links[cycle % len(links)]
                for up in (False, True):
                    since = time.time()
                    set_link(spec, link, up)
                    if up:
                        tally.restored += 1
                    else:
                        tally.failed += 1
                    if not wait_event(lambda: list(rc.events), link, up, since):
                        tally.lost.append(f"{link_name(link)} {'up' if up else 'down'}")
                    time.sleep(max(0.0, args.cycle / 2 - (time.time() - since)))
                if cycle % 2 == 0:
                    lb.handle(modes[(cycle // 2) % 2], None)
                    tally.lb_changes += 1
                else:
                    with lb.lock:
                        ctl.program(push_pipeline=True)
                    tally.pushes += 1
                cycle += 1
            sample(session, spec, tally, time.monotonic() - t0)
            for client in clients:
                client.stopping.set()
            loss = flow_loss(flows)
    messages = [c.messages for c in clients]
    print(f"web clients: {sum(messages)} stream messages ({min(messages)}-{max(messages)} per "
          f"client), {sum(c.errors for c in clients)} reconnects; flows: {loss}")
    problems = [f"lost event: {what}" for what in tally.lost]
    if min(messages) == 0:
        problems.append("a web client got no stream message")
    for name, rows in tally.samples.items():
        for metric in MARGIN:
            values = [row[metric] for row in rows]
            if grown(values, metric):
                problems.append(f"{name}: {metric} grew {values[1]:.1f} -> {values[-1]:.1f}")
    growth = {metric: max(rows[-1][metric] - rows[min(1, len(rows) - 1)][metric]
                          for rows in tally.samples.values()) for metric in MARGIN}
    print(f"largest change from the first sample after warm-up to the last: RSS "
          f"{growth['rss_mb']:+.1f} MB, fds {growth['fds']:+.0f}, threads {growth['threads']:+.0f}")
    for problem in problems:
        print(f"FAIL {problem}")
    print("soak: " + ("FAILED" if problems else "passed") + f" ({args.minutes:g} min, "
          f"{tally.failed} link failures, {tally.lb_changes} lb changes, {tally.pushes} pushes)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
