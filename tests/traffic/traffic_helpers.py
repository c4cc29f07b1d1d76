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
    args = [f"--{k}={v}" for k, v in impairments.items()]
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
