"""Helpers shared by the traffic tests (a module with a unique name, unlike conftest)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from typing import Any

from traffic import netns
from traffic.hosts import NetnsHost
from traffic.impair import relay_in


@contextlib.contextmanager
def relay(tb: netns.Testbed, **impairments: str) -> Iterator[dict[str, Any]]:
    """Run traffic.impair in the testbed's middle namespace; yields its counts after stop."""
    args = [f"--{k}={v}" if v != "" else f"--{k}" for k, v in impairments.items()]
    with relay_in(f"{tb.prefix}m", f"{tb.prefix}m0", f"{tb.prefix}m1", args) as counts:
        yield counts


@contextlib.contextmanager
def capture(host: NetnsHost, path: str) -> Iterator[None]:
    """tcpdump on the host's interface into `path` (incoming RoCE frames) while in the block."""
    # --immediate-mode: no packets waiting in a ring block when tcpdump is stopped
    proc = host.popen(["tcpdump", "-i", host.iface, "--immediate-mode", "-U", "-n", "-s", "0",
                       "-w", path, "-Q", "in", "udp port 4791 or ip proto 253"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # readiness: "listening on <iface> ..."
        assert "listening on" in line, line + proc.stderr.read()
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def data_psns(pcap: str) -> list[int]:
    """PSNs of the RoCE data frames in a capture, in arrival order."""
    from scapy.utils import rdpcap

    from traffic.impair import data_psn

    out = []
    for pkt in rdpcap(pcap):
        psn = data_psn(bytes(pkt))
        if psn is not None:
            out.append(psn)
    return out


def expected_counts(psns: list[int]) -> dict[str, int]:
    """Loss and reordering of an arrival sequence (PSNs from 0, no wrap), computed directly."""
    seen: set[int] = set()
    highest = -1
    ooo = dist_max = dist_sum = 0
    for p in psns:
        if p < highest and p not in seen:
            ooo += 1
            dist_max = max(dist_max, highest - p)
            dist_sum += highest - p
        seen.add(p)
        highest = max(highest, p)
    return {"lost": highest + 1 - len(seen), "out_of_order": ooo, "reorder_distance_max": dist_max,
            "reorder_distance_sum": dist_sum, "packets": len(seen)}
