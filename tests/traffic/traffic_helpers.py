"""Helpers shared by the traffic tests (a module with a unique name, unlike conftest)."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from typing import Any

from traffic import netns
from traffic.hosts import NetnsHost, python_argv


@contextlib.contextmanager
def relay(tb: netns.Testbed, **impairments: str) -> Iterator[dict[str, Any]]:
    """Run traffic.impair in the testbed's middle namespace; yields its counts after stop."""
    ns = f"{tb.prefix}m"
    args = [f"--{k}={v}" if v != "" else f"--{k}" for k, v in impairments.items()]
    host = NetnsHost("m", ns, "", "")
    proc = host.popen(python_argv("traffic.impair", "--ingress", f"{tb.prefix}m0",
                                  "--egress", f"{tb.prefix}m1", *args),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    counts: dict[str, Any] = {}
    try:
        line = proc.stdout.readline()  # readiness: the relay prints once its sockets are open
        assert json.loads(line)["event"] == "ready", proc.stderr.read()
        yield counts
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
        if out.strip():
            counts.update(json.loads(out.strip().splitlines()[-1]))


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
