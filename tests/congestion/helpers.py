"""Parameters and wire captures shared by the congestion tests."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PARAMS: dict[str, Any] = {
    "message_kb": 100, "host_pps": 250, "fabric_pps": 1000, "depth": 64, "link_mbps": 10.0,
    "kmin": 5, "kmax": 20, "pmax": 0.2, "xoff": 10, "xon": 4, "quanta": 1000,
    "refresh_us": 20_000, "victim_pps": 100, "victim_s": 3.5, "victim_lead_s": 1.0,
    "idle_s": 8.0, "sample_ms": 50, "trim_depth": 16,
}


@contextlib.contextmanager
def capture(node: Any, iface: str, path: Path, bpf: str) -> Iterator[None]:
    """tcpdump on `iface` of a Mininet node into `path` while in the block (`bpf` picks the
    direction). Immediate mode: without it, frames still in the capture ring when tcpdump is
    stopped are lost."""
    proc = node.popen(["tcpdump", "--immediate-mode", "-i", iface, "-U", "-n", "-w", str(path),
                       bpf],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # readiness: "listening on <iface> ..."
        assert "listening on" in line, line + proc.stderr.read()
        yield
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
