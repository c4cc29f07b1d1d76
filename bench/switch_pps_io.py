#!/usr/bin/env python3
"""Traffic for the switch benchmarks: two host namespaces on veth pairs, raw-socket senders and
receivers run inside them (`ip netns exec ... switch_pps_io.py --worker ...`).

Senders: paced (1 ms batches with sleeps between, leaving the CPU to the switch), flood (as fast
as one core sends), and stamped (one frame every few ms carrying CLOCK_MONOTONIC at send, for
latency through an idle switch). The receiver counts this run's frames and reports the arrival
times of the first and the last one, and for stamped frames the one-way delays' percentiles
(both namespaces share the kernel's monotonic clock).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

MARK = b"p4switch-bench"
STAMP = struct.Struct("!Q")
ME = str(Path(__file__).resolve())
FLOOD_SENDER_C = Path(__file__).resolve().with_name("flood_sender.c")


# ---- frames ---------------------------------------------------------------------------------
def _csum(data: bytes) -> int:
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(size: int, run: int, sport: int = 49152) -> bytes:
    """A UDP frame of `size` bytes (no FCS) whose payload carries the marker, the run number
    and room for a send timestamp."""
    tag = MARK + struct.pack("!I", run)
    payload_len = max(len(tag) + STAMP.size, size - 14 - 20 - 8)
    payload = tag + bytes(payload_len - len(tag))
    udp = struct.pack("!HHHH", sport, 4791 + 1, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton("10.0.1.1"), socket.inet_aton("10.0.2.1"))
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    eth = bytes.fromhex("020000000002020000000001") + b"\x08\x00"
    return eth + ip + udp


STAMP_AT = 14 + 20 + 8 + len(MARK) + 4  # offset of the send timestamp in a frame


# ---- workers (inside a host namespace) -------------------------------------------------------
def raw(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 3))
    s.setsockopt(socket.SOL_SOCKET, 33, 64 * 1024 * 1024)  # SO_RCVBUFFORCE (root)
    s.setsockopt(socket.SOL_SOCKET, 32, 4 * 1024 * 1024)  # SO_SNDBUFFORCE
    s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
    return s


def worker_send(iface: str, rate: int, seconds: float, size: int, run: int) -> None:
    """rate > 0: paced in 1 ms batches with sleeps in between, so that the sender leaves the
    CPU to the switch (a busy-waiting sender would take a whole core of the two).
    rate 0: flood, as fast as the socket takes frames. rate < 0: stamped, one frame every
    -rate µs. Prints the frames sent and the seconds taken."""
    s = raw(iface)
    frame = udp_frame(size, run)
    send, clock = s.send, time.perf_counter
    start = clock()
    sent = 0
    if rate > 0:
        n = int(rate * seconds)
        while sent < n:
            due = min(n, int((clock() - start) * rate) + 1)
            while sent < due:
                send(frame)
                sent += 1
            time.sleep(0.001)
    elif rate == 0:
        end = start + seconds
        while clock() < end:
            for _ in range(64):
                try:
                    send(frame)
                    sent += 1
                except BlockingIOError:
                    break
    else:
        head, tail = frame[:STAMP_AT], frame[STAMP_AT + STAMP.size:]
        gap = -rate / 1e6
        for _ in range(int(seconds / gap)):
            send(head + STAMP.pack(time.monotonic_ns()) + tail)
            sent += 1
            time.sleep(gap)
    print(f"{sent} {clock() - start:.6f}", flush=True)


def worker_recv(iface: str, run: int, stamped: bool) -> None:
    """Counts this run's frames (late frames of earlier runs are not counted) until SIGTERM;
    prints `count first_ns last_ns p50_us p99_us` (delays only for stamped frames)."""
    tag = MARK + struct.pack("!I", run)
    s = raw(iface)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    count, first, last, delays = 0, 0, 0, []
    recv, now = s.recv, time.monotonic_ns
    while not stop:
        r, _, _ = select.select([s], [], [], 0.05)
        if not r:
            continue
        s.setblocking(False)
        try:
            while True:
                data = recv(2048)
                if tag in data:
                    t = now()
                    count += 1
                    first = first or t
                    last = t
                    if stamped:
                        delays.append(t - STAMP.unpack_from(data, STAMP_AT)[0])
        except BlockingIOError:
            pass
        s.setblocking(True)
    delays.sort()
    p50 = delays[len(delays) // 2] / 1e3 if delays else 0.0
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))] / 1e3 if delays else 0.0
    print(f"{count} {first} {last} {p50:.1f} {p99:.1f}", flush=True)


def worker_drain(iface: str, quiet: float, limit: float) -> None:
    """Returns once nothing has arrived for `quiet` seconds (at most `limit` seconds);
    prints the frames that arrived meanwhile."""
    s = raw(iface)
    count, end = 0, time.monotonic() + limit
    while time.monotonic() < end:
        if not select.select([s], [], [], quiet)[0]:
            break
        s.recv(2048)
        count += 1
    print(count, flush=True)


# ---- orchestration ---------------------------------------------------------------------------
def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


class Bench:
    """Host namespaces h1 and h2, each linked by a veth pair to a switch-side interface in the
    root namespace; names carry this process's pid. SIGTERM ends the bench through its
    `finally` clauses, so `cleanup` still runs."""

    def __init__(self, mtu: int | None = None) -> None:
        """`mtu`: of every veth (None: the kernel's 1500)."""
        self.tag = f"swb{os.getpid() % 10000}"
        self.mtu = mtu
        self.ns: list[str] = []
        self.links: list[str] = []
        signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))

    def veth(self, name: str, peer: str, *peer_options: str) -> None:
        """A veth pair `name` - `peer` (`peer_options`: e.g. its namespace), at `mtu`."""
        mtu = ["mtu", str(self.mtu)] if self.mtu is not None else []
        sh("ip", "link", "add", name, *mtu, "type", "veth", "peer", "name", peer, *mtu,
           *peer_options)
        self.links.append(name)

    def setup(self) -> tuple[str, str]:
        for i in (1, 2):
            ns = f"{self.tag}h{i}"
            sh("ip", "netns", "add", ns)
            self.ns.append(ns)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            sw = f"{self.tag}p{i}"
            self.veth(sw, "eth0", "netns", ns)
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw}.disable_ipv6=1")
            sh("ip", "link", "set", sw, "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
        return self.links[0], self.links[1]

    def cleanup(self) -> None:
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for ns in self.ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


_runs = iter(range(1, 1 << 31))


def run_traffic(ns_tx: str, ns_rx: str, rate: int, seconds: float, size: int
                ) -> tuple[int, float, int, float, float, float]:
    """One run (rate as in `worker_send`): (sent, send seconds, received, forwarding seconds
    first-to-last arrival, p50 µs, p99 µs). Frames still in flight 0.5 s after the sender
    finished count as lost."""
    run = next(_runs)
    rx = subprocess.Popen(["ip", "netns", "exec", ns_rx, sys.executable, ME, "--worker", "recv",
                           "eth0", str(run), str(int(rate < 0))], stdout=subprocess.PIPE,
                          text=True)
    assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
    tx = subprocess.run(["ip", "netns", "exec", ns_tx, sys.executable, ME, "--worker", "send",
                         "eth0", str(rate), str(seconds), str(size), str(run)],
                        capture_output=True, text=True, check=True)
    sent, took = tx.stdout.split()
    time.sleep(0.5)  # what is still queued in the switch arrives or counts as lost
    rx.send_signal(signal.SIGTERM)
    count, first, last, p50, p99 = rx.communicate(timeout=10)[0].split()
    time.sleep(0.5)  # a backlog left in the switch drains before the next run
    return (int(sent), float(took), int(count), (int(last) - int(first)) / 1e9, float(p50),
            float(p99))


def build_flood_sender(workdir: Path) -> Path | str:
    """bench/flood_sender.c compiled into `workdir`, or why it is not there."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return "no C compiler"
    binary = workdir / "flood_sender"
    done = subprocess.run([cc, "-O2", "-o", str(binary), str(FLOOD_SENDER_C)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "error" in line]
        return f"{FLOOD_SENDER_C.name} did not compile: {(errors or ['?'])[0]}"
    return binary


def run_c_flood(ns_tx: str, sender: Path, ports: tuple[str, str], seconds: float, size: int
                ) -> tuple[float, float]:
    """The C flood sender in `ns_tx` (on CPU 0) for `seconds`: (pps arriving on the switch's
    ingress interface, pps it transmits on its egress interface towards the receiver), both
    counted by the kernel over the middle half of the run, so start-up and the backlog left at
    the end do not count."""
    from controller.linkwatch import interface_counter  # the workers run without the repo

    frame = udp_frame(size, next(_runs))
    tx = subprocess.Popen(["ip", "netns", "exec", ns_tx, "taskset", "-c", "0", str(sender),
                           "eth0", str(seconds), frame.hex()], stdout=subprocess.DEVNULL)
    ingress, egress = ports

    def counts() -> tuple[int, int, float]:
        arrived = interface_counter(ingress, "rx_packets")
        left = interface_counter(egress, "tx_packets")
        if arrived is None or left is None:
            raise RuntimeError(f"no kernel counters for {ingress} or {egress}")
        return arrived, left, time.monotonic()

    time.sleep(seconds / 4)  # the window's start, not a readiness wait
    in0, out0, t0 = counts()
    time.sleep(seconds / 2)
    in1, out1, t1 = counts()
    tx.wait(timeout=seconds + 30)
    if tx.returncode != 0:
        raise RuntimeError(f"flood_sender failed (exit {tx.returncode})")
    return (in1 - in0) / (t1 - t0), (out1 - out0) / (t1 - t0)


def drain(ns_rx: str, quiet: float = 1.0, limit: float = 60.0) -> int:
    """Wait until the switch has forwarded its backlog (nothing arrives for `quiet` s)."""
    done = subprocess.run(["ip", "netns", "exec", ns_rx, sys.executable, ME, "--worker",
                           "drain", "eth0", str(quiet), str(limit)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def run_rate(ns_tx: str, ns_rx: str, rate: int, seconds: float, size: int) -> tuple[int, int]:
    """(sent, received) for one paced run."""
    sent, _, received, *_ = run_traffic(ns_tx, ns_rx, rate, seconds, size)
    return sent, received


def main(argv: list[str]) -> int:
    kind, *rest = argv
    if kind == "send":
        worker_send(rest[0], int(rest[1]), float(rest[2]), int(rest[3]), int(rest[4]))
    elif kind == "drain":
        worker_drain(rest[0], float(rest[1]), float(rest[2]))
    else:
        worker_recv(rest[0], int(rest[1]), rest[2] == "1")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["--worker"]:
        sys.exit("switch_pps_io.py is run by bench/switch_pps.py (--worker send|recv|drain ...)")
    sys.exit(main(sys.argv[2:]))
