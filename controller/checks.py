"""Checks that the routes work, run from the hosts of a running fabric.

Everything takes `popen(nic_name, argv) -> subprocess.Popen`, which starts a command inside a
NIC's namespace (with Mininet: `net.get(nic).popen(argv, ...)`), so these checks do not depend on
how the network was built.

- `pingall`: every NIC pings every other NIC once (`ping -c 1 -W 1`), many at a time.
- `send_udp`: a burst of UDP datagrams from one NIC, one flow or many (source port varies), with
  a chosen IP TTL; used with the switches' port counters to follow paths and spread.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from topos.model import FabricSpec

Popen = Callable[[str, list[str]], subprocess.Popen]


@dataclass
class PingResult:
    sent: int = 0
    lost: list[tuple[str, str]] = field(default_factory=list)  # (source NIC, destination NIC)

    @property
    def loss(self) -> float:
        return len(self.lost) / self.sent if self.sent else 0.0

    def __str__(self) -> str:
        text = (f"pingall: {self.sent - len(self.lost)}/{self.sent} received, "
                f"{100 * self.loss:.1f}% lost")
        if self.lost:
            shown = ", ".join(f"{a}->{b}" for a, b in self.lost[:20])
            more = f" and {len(self.lost) - 20} more" if len(self.lost) > 20 else ""
            text += f"\n  lost: {shown}{more}"
        return text


def all_pairs(spec: FabricSpec) -> list[tuple[str, str]]:
    nics = spec.host_nics()
    return [(a.name, b.name) for a in nics for b in nics if a.name != b.name]


def pingall(spec: FabricSpec, popen: Popen, *, pairs: Sequence[tuple[str, str]] | None = None,
            parallel: int = 32, timeout_s: int = 1) -> PingResult:
    """One ping per ordered pair of NICs; `parallel` pings in flight at a time."""
    pairs = list(pairs if pairs is not None else all_pairs(spec))
    result = PingResult(sent=len(pairs))
    running: list[tuple[tuple[str, str], subprocess.Popen]] = []

    def reap(limit: int) -> None:
        while len(running) > limit:
            pair, proc = running.pop(0)
            proc.wait()
            if proc.returncode != 0:
                result.lost.append(pair)

    for src, dst in pairs:
        argv = ["ping", "-n", "-q", "-c", "1", "-W", str(timeout_s), spec.nic(dst).ip]
        running.append(((src, dst), popen(src, argv)))
        reap(parallel - 1)
    reap(0)
    return result


# A tiny sender run inside a host namespace with the system Python: no project imports needed.
_SENDER = """
import socket, sys, time
dst, dport, sport0, flows, count, ttl = sys.argv[1], *map(int, sys.argv[2:7])
gap = float(sys.argv[7])
for flow in range(flows):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
    s.bind(("0.0.0.0", sport0 + flow))
    for _ in range(count):
        s.sendto(b"x" * 64, (dst, dport))
        time.sleep(gap)  # pacing, so a burst does not overflow the shaped host link
    s.close()
"""


def send_udp(popen: Popen, src_nic: str, dst_ip: str, *, flows: int = 1, packets: int = 1,
             ttl: int = 64, sport: int = 20000, dport: int = 9, gap_s: float = 0.0005) -> None:
    """`packets` datagrams on each of `flows` flows (source ports sport, sport+1, ...), one
    every `gap_s` seconds (the default suits the lab's 10 Mb/s links and 64-packet queues)."""
    argv = [sys.executable, "-c", _SENDER, dst_ip, str(dport), str(sport), str(flows),
            str(packets), str(ttl), str(gap_s)]
    proc = popen(src_nic, argv)
    out, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"UDP sender on {src_nic} failed (exit {proc.returncode}): "
                           f"{(err or out or b'').decode(errors='replace').strip()}")
