"""Fabrics split over two servers: this machine and a second one reached over ssh on 127.0.0.2.

Both 'servers' share this kernel, so the runs also check that their interfaces, namespaces and
ports never clash, and that nothing is left on either side afterwards. Switch, NIC and interface
names start with `cl`; management ports sit in a range of their own."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.conftest import leftovers, taps
from tests.cluster.sshd import sshd_children
from tests.ports import FABRICS
from topos import FabricSpec, build_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SERVERS = "localhost,127.0.0.2"


def cl_fabric(name: str, **scale: int) -> FabricSpec:
    return FABRICS["cluster"].apply(build_fabric(name, **scale))


def fabric_lab(args: list[str], tmp_path: Path, server2, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(tmp_path / "run"), "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "fabric_lab.cli", *args, "--servers", SERVERS,
                           "--ssh-config", str(server2.ssh_config)], cwd=ROOT, env=env,
                          text=True, capture_output=True, **kwargs)


def write(spec: FabricSpec, tmp_path: Path) -> Path:
    path = tmp_path / f"{spec.name}.json"
    path.write_text(spec.to_json())
    return path


@pytest.mark.parametrize("fabric, scale, crossing", [
    ("leafspine", {}, "4 of 16 links cross servers"),
    ("aipod", {"rails": 2, "groups": 2, "servers_per_group": 1, "spines_per_rail": 2,
               "superspines": 2}, "4 of 20 links cross servers"),
])
def test_pingall_over_two_servers(fabric, scale, crossing, tmp_path, server2) -> None:
    spec = cl_fabric(fabric, **scale)
    before = taps()
    done = fabric_lab(["up", str(write(spec, tmp_path)), "--target", "p4switch", "--pingall"],
                      tmp_path, server2, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert crossing in out
    pairs = len(spec.host_nics()) * (len(spec.host_nics()) - 1)
    assert f"pingall: {pairs}/{pairs} received, 0.0% lost" in out
    assert leftovers(spec, server2, tmp_path / "run", before) == []


@pytest.mark.bmv2
def test_bmv2_switches_on_both_servers(tmp_path, server2) -> None:
    spec = cl_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2)
    before = taps()
    done = fabric_lab(["up", str(write(spec, tmp_path)), "--target", "bmv2", "--pingall",
                       "--queue-depth", "48", "--log-dir", str(tmp_path / "logs")], tmp_path,
                      server2, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "pingall: 12/12 received, 0.0% lost" in out
    # clleaf1 and clspine1 ran on the second server, listening for P4Runtime at its address
    # (their output comes back over ssh on a terminal, so it is not held in a buffer)
    for sw in (spec.switch("clleaf1"), spec.switch("clspine1")):
        log = (tmp_path / "logs" / f"{sw.name}.log").read_text(errors="replace")
        assert f"Server listening on 127.0.0.2:{sw.grpc_port}" in log, (sw.name, log[-500:])
    assert leftovers(spec, server2, tmp_path / "run", before) == []


def test_link_across_servers_fails_and_traffic_recovers(tmp_path, server2) -> None:
    spec = cl_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1)
    # placement: clleaf0 + clspine0 here, clleaf1 + clspine1 on the second server, so
    # clleaf0~clspine1 is a tunnel; with it down, h0 -> h1 goes over clspine0 (another tunnel)
    commands = ["link_fail clleaf0 clspine1",
                "py __import__('time').sleep(1.5)",  # the watcher's poll and the reroute
                "events", "clh0n0 ping -c 3 -i 0.2 -W 2 10.0.1.1",
                "clh1n0 ping -c 1 -W 2 10.0.0.1", "link_restore clleaf0 clspine1",
                "py __import__('time').sleep(1.5)", "events", "exit"]
    before = taps()
    # --queue-depth: the runtime CLI reaches every switch, the far ones through the forwards
    done = fabric_lab(["up", str(write(spec, tmp_path)), "--target", "p4switch",
                       "--queue-depth", "48"], tmp_path, server2,
                      input="\n".join(commands) + "\n", timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "2 of 6 links cross servers" in out
    assert "  queues " in out
    assert "clleaf0~clspine1 down (port): rerouted in" in out
    assert "3 received" in out and "1 received" in out
    assert "clleaf0~clspine1 up (port): rerouted in" in out
    assert leftovers(spec, server2, tmp_path / "run", before) == []


def test_ctrl_c_tears_down_both_servers(tmp_path, server2) -> None:
    spec = cl_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1)
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(tmp_path / "run"), "PYTHONUNBUFFERED": "1"}
    before = taps()
    proc = subprocess.Popen([sys.executable, "-m", "fabric_lab.cli", "up",
                             str(write(spec, tmp_path)), "--target", "p4switch", "--run",
                             "sleep 600", "--servers", SERVERS, "--ssh-config",
                             str(server2.ssh_config)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)  # its own group, as a shell job
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.strip().startswith("total"):
                break
        assert any(ln.strip().startswith("total") for ln in lines), "".join(lines)
        assert sshd_children(server2), "nothing ran on the second server"
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground job
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines) + rest
    assert proc.returncode == 130, out
    assert "interrupted; taking the fabric down" in out
    assert leftovers(spec, server2, tmp_path / "run", before) == []


@pytest.mark.parametrize("fabric", ["leafspine", "aipod"])
def test_failover_quick_over_two_servers(fabric, tmp_path, server2) -> None:
    before = taps()
    out_dir = tmp_path / "result"
    # one flow per NIC pair at 500 datagrams/s of 1000 bytes: aipod's eight rails at three
    # flows each would offer 24 flows across five switch hops, several times what two cores
    # forward (docs/rates.md); the links between servers keep the kernel's MTU (mtu=0)
    done = fabric_lab(["run", "failover", "--quick", "--fabric", fabric, "--target", "p4switch",
                       "--param", "kinds=uplink", "--param", "flows_per_pair=1",
                       "--param", "mtu=0", "--param", "size=1000", "--param", "pps=500",
                       "--out", str(out_dir)], tmp_path, server2, timeout=280)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert json.loads((out_dir / "params.json").read_text())["status"] == "complete"
    with (out_dir / "outcomes.csv").open() as f:
        rows = list(csv.DictReader(f))
    crossed = [r for r in rows if r["crossed"] == "1"]
    assert crossed, out
    for row in crossed:  # the failed link's flows came back to full throughput
        assert row["recovery_s"] != "", row
        assert float(row["loss_window_ms"]) < 2500, row
    assert leftovers(build_fabric(fabric), server2, tmp_path / "run", before) == []


def _gretap_supported() -> bool:
    name = f"clgre{os.getpid() % 100000}"
    done = subprocess.run(["ip", "link", "add", "name", name, "type", "gretap", "local",
                           "127.0.0.1", "remote", "127.0.0.2", "key", "1"], capture_output=True)
    subprocess.run(["ip", "link", "del", name], capture_output=True)
    return done.returncode == 0


def test_gre_tunnels_between_servers(tmp_path, server2) -> None:
    if not _gretap_supported():
        pytest.skip("this kernel has no gretap (ip_gre)")
    spec = cl_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2)
    before = taps()
    done = fabric_lab(["up", str(write(spec, tmp_path)), "--target", "p4switch", "--pingall",
                       "--tunnel", "gre"], tmp_path, server2, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "pingall: 12/12 received, 0.0% lost" in out
    assert leftovers(spec, server2, tmp_path / "run", before) == []
