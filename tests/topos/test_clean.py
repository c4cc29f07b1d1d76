"""Exit paths of a running network: SIGTERM cleans up by itself; after SIGKILL the processes end
with the run and `fabric-lab clean` removes the interfaces, namespaces kept alive by others, and
the run state it left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from topos_helpers import PORT_SHIFT, plan_interfaces, root_interfaces, shifted

from fabric_lab.cli import main as fabric_lab
from topos import build_fabric
from topos.mininet.nodes import grpc_listening
from topos.mininet.procs import wait_gone
from topos.mininet.runstate import load_all

pytestmark = [pytest.mark.root, pytest.mark.mininet]

RUNNER = Path(__file__).with_name("run_fabric.py")


def start_run(fabric: str, run_dir: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(RUNNER), fabric, str(run_dir), str(PORT_SHIFT)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # blocks until the network is up (or the runner died)
    if line.strip() != "READY":
        proc.kill()
        raise AssertionError(f"runner did not come up: {line!r} {proc.stderr.read()}")
    return proc


@pytest.fixture
def spec():
    return shifted(build_fabric("leafspine"))


def test_sigterm_tears_everything_down(spec, tmp_path) -> None:
    proc = start_run("leafspine", tmp_path)
    (state,) = load_all(tmp_path)
    assert all(grpc_listening(sw.grpc_port) for sw in spec.switches)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert root_interfaces(plan_interfaces(spec)) == []
    assert not any(p.alive() for p in state.processes)
    assert load_all(tmp_path) == []


def test_clean_after_sigkill(spec, tmp_path, capsys) -> None:
    proc = start_run("leafspine", tmp_path)
    try:
        (state,) = load_all(tmp_path)
        # A running lab is not clean's business unless forced.
        assert fabric_lab(["clean", "--run-dir", str(tmp_path)]) == 0
        assert "still running" in capsys.readouterr().out
        assert all(p.alive() for p in state.processes)
        assert root_interfaces(plan_interfaces(spec)) != []
        # A process running inside a host, like a traffic receiver, keeps its namespace alive.
        host = next(p for p in state.processes if p.kind == "host")
        stray = subprocess.Popen(["mnexec", "-a", str(host.pid), "sleep", "300"])
    finally:
        proc.kill()
        proc.wait()
    try:
        # The switch processes and the shells end with the run (parent-death signal); SIGKILL
        # leaves the links between switches, and the stray keeps its host's namespace.
        switches = [p for p in state.processes if p.kind == "switch"]
        assert switches and all(wait_gone(p.pid, 10.0) for p in switches)
        assert not any(p.alive() for p in switches)
        assert stray.poll() is None
        assert root_interfaces(plan_interfaces(spec)) != []
        assert fabric_lab(["clean", "--run-dir", str(tmp_path), "--timeout", "2"]) == 0
        out = capsys.readouterr().out
        assert "removed run state" in out and "interface(s): " in out
        assert f"pid {stray.pid} in host {host.name}" in out
        assert stray.wait(timeout=5) == -signal.SIGTERM
    finally:
        if stray.poll() is None:
            stray.kill()
    assert not any(p.alive() for p in state.processes)
    assert root_interfaces(plan_interfaces(spec)) == []
    assert not any(grpc_listening(sw.grpc_port) for sw in spec.switches)
    assert load_all(tmp_path) == []
    assert fabric_lab(["clean", "--run-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "nothing to clean"


def test_clean_needs_no_state_for_plan_interfaces(tmp_path, capsys) -> None:
    """Interfaces named by a fabric's default plan go even without a run-state file."""
    name = build_fabric("bigraph").links[0].b.intf  # a switch-side name, e.g. up0-eth1
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", "toposclean0"],
                   check=True)
    try:
        assert fabric_lab(["clean", "--run-dir", str(tmp_path)]) == 0
        assert name in capsys.readouterr().out
        assert root_interfaces([name, "toposclean0"]) == []
    finally:
        if root_interfaces([name]):
            subprocess.run(["ip", "link", "del", name], check=False)
    assert os.geteuid() == 0
