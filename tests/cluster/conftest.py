"""Cluster tests: a second 'server' reached over ssh on 127.0.0.2, and checks that a run left
nothing behind on either side (both live in this kernel)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.cluster.sshd import SecondServer, available, second_server, sshd_children  # noqa: E402
from topos.mininet.patch import patch_names  # noqa: E402
from topos.model import FabricSpec  # noqa: E402


@pytest.fixture(scope="module")
def server2(tmp_path_factory: pytest.TempPathFactory):
    reason = available()
    if reason:
        pytest.skip(reason)
    with second_server(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def taps() -> set[str]:
    return {p.name for p in Path("/sys/class/net").iterdir() if re.fullmatch(r"tap\d+", p.name)}


def leftovers(spec: FabricSpec, server: SecondServer, run_dir: Path,
              taps_before: set[str]) -> list[str]:
    """What a finished run left on this machine or the second server; empty when clean."""
    found = []
    names = {end.intf for ln in spec.links for end in (ln.a, ln.b)}
    names |= {p for ln in spec.links for p in patch_names(ln.a.intf)}
    found += [f"interface {n}" for n in sorted(names) if Path("/sys/class/net", n).exists()]
    found += [f"tap {t}" for t in sorted(taps() - taps_before)]
    found += [f"ssh session pid {p} on the second server" for p in sshd_children(server)]
    nodes = [s.name for s in spec.switches] + [n.name for n in spec.host_nics()]
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    for line in ps.splitlines():
        if any(f"mininet:{n}" in line.split() or f"@{n}-eth" in line for n in nodes) \
                or (f"{server.address}" in line and "ssh" in line):
            found.append(f"process {line.strip()}")
    cluster_dir = run_dir / "cluster"
    if cluster_dir.exists():
        found += [f"remote run directory {p}" for p in cluster_dir.iterdir()] or []
    found += [f"run state {p.name}" for p in run_dir.glob("*.json")] if run_dir.exists() else []
    return found
