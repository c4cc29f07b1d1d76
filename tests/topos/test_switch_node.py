"""The P4 switch node's start / readiness / stop logic, run for real against a stand-in switch
program (tests/topos/fake_switch.py) that accepts on the gRPC port like a switch does."""

from __future__ import annotations

import dataclasses
import sys
import time

import pytest
from topos_helpers import FAKE_SWITCH, plan_interfaces, root_interfaces, shifted

from targets import P4SWITCH, Target
from topos import build_fabric
from topos.mininet import FabricNetwork, SwitchStartError
from topos.mininet.nodes import grpc_listening
from topos.mininet.runstate import load_all

pytestmark = [pytest.mark.root, pytest.mark.mininet]


def fake(mode: str) -> Target:
    """The stand-in switch, started with p4switch's argv."""
    return dataclasses.replace(P4SWITCH, name=f"fake-{mode}", requires=(),
                               command=(sys.executable, str(FAKE_SWITCH), "--mode", mode))


def assert_nothing_left(spec, run_dir) -> None:
    assert root_interfaces(plan_interfaces(spec)) == []
    assert not any(grpc_listening(sw.grpc_port) for sw in spec.switches)
    assert load_all(run_dir) == []


def test_switches_start_ready_and_stop_on_sigterm(tmp_path) -> None:
    spec = shifted(build_fabric("leafspine"))
    with FabricNetwork(spec, fake("normal"), run_dir=tmp_path, log_dir=tmp_path / "logs") as net:
        (state,) = load_all(tmp_path)
        recorded = {p.name: p for p in state.processes if p.kind == "switch"}
        assert sorted(recorded) == sorted(sw.name for sw in spec.switches)
        for sw in spec.switches:
            assert grpc_listening(sw.grpc_port), sw.name
            node = net.switch(sw.name)
            assert node.proc.pid == recorded[sw.name].pid
            log = (tmp_path / "logs" / f"{sw.name}.log").read_text()
            ports = " ".join(f"-i {p}@{i}" for p, i in sorted(spec.ports(sw.name).items()))
            assert ports in log and f"--device-id {sw.device_id}" in log
        node = net.switch("leaf0")
        begun = time.monotonic()
        assert node.stop_target() == 0  # exited on SIGTERM, not killed
        assert time.monotonic() - begun < 2
        assert not grpc_listening(spec.switch("leaf0").grpc_port)
    assert not any(p.alive() for p in state.processes)
    assert_nothing_left(spec, tmp_path)


def test_stubborn_switch_is_killed_after_timeout(tmp_path) -> None:
    spec = shifted(build_fabric("leafspine", leaves=2, spines=1))
    net = FabricNetwork(spec, fake("stubborn"), run_dir=tmp_path, stop_timeout=0.5)
    with net:
        begun = time.monotonic()
        status = net.switch("spine0").stop_target()
        waited = time.monotonic() - begun
        assert status == -9  # SIGKILL
        assert 0.5 <= waited < 3
    assert_nothing_left(spec, tmp_path)


def test_switch_that_exits_is_reported_with_its_log_and_cleaned_up(tmp_path) -> None:
    spec = shifted(build_fabric("leafspine", leaves=2, spines=1))
    net = FabricNetwork(spec, fake("crash"), run_dir=tmp_path, log_dir=tmp_path / "logs")
    with pytest.raises(SwitchStartError, match="exited with status 3") as err:
        net.start()
    assert "crashing on purpose" in str(err.value)
    assert_nothing_left(spec, tmp_path)


def test_switch_that_never_listens_times_out(tmp_path) -> None:
    spec = shifted(build_fabric("leafspine", leaves=2, spines=1))
    net = FabricNetwork(spec, fake("silent"), run_dir=tmp_path, ready_timeout=1.0)
    begun = time.monotonic()
    with pytest.raises(SwitchStartError, match="not listening after 1 s"):
        net.start()
    assert time.monotonic() - begun < 10
    assert_nothing_left(spec, tmp_path)


def test_busy_grpc_port_is_refused(tmp_path) -> None:
    import socket

    spec = shifted(build_fabric("leafspine", leaves=2, spines=1))
    port = spec.switch("leaf1").grpc_port
    with socket.create_server(("127.0.0.1", port)):
        net = FabricNetwork(spec, fake("normal"), run_dir=tmp_path)
        with pytest.raises(SwitchStartError, match=f"already listens on gRPC port {port}"):
            net.start()
    assert_nothing_left(spec, tmp_path)
