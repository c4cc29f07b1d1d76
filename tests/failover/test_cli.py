"""The Mininet CLI's link commands on a real (unrouted) leaf-spine network, prefix `fo`."""

from __future__ import annotations

import io
import os
import subprocess
import time

import pytest

from tests.failover.fabrics import fo_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def operstate(intf: str) -> str:
    with open(f"/sys/class/net/{intf}/operstate") as f:
        return f.read().strip()


def becomes(intfs: list[str], state: str, timeout: float = 3.0) -> bool:
    """Wait until every interface reports `state` (carrier changes reach operstate late)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(operstate(i) == state for i in intfs):
            return True
        time.sleep(0.02)  # poll interval
    return False


def has_drop_filter(intf: str) -> bool:
    done = subprocess.run(["tc", "filter", "show", "dev", intf, "egress"], capture_output=True,
                          text=True, check=False)
    return "bpf" in done.stdout


@pytest.fixture(scope="module")
def network():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    from topos.mininet import FabricNetwork

    spec = fo_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1)
    with FabricNetwork(spec, None) as net:
        yield spec, net


def run_cli(network, tmp_path, commands: list[str]) -> str:
    from topos.mininet.cli import FabricCLI

    spec, net = network
    script = tmp_path / "commands"
    script.write_text("\n".join(commands) + "\n")
    out = io.StringIO()
    with open(os.devnull) as stdin:
        FabricCLI(net.net, spec, events=lambda: ["12:00:00.000 x~y down (port)"], stdin=stdin,
                  stdout=out, script=str(script))
    return out.getvalue()


def test_link_fail_and_restore_by_node_pair(network, tmp_path):
    out = run_cli(network, tmp_path, ["link_fail foleaf0 fospine1"])
    assert "foleaf0~fospine1 down" in out
    # both ends lose their carrier, neither is set down (BMv2 stops receiving on every port
    # while one of its ports is down: topos.mininet.patch)
    assert becomes(["foleaf0-eth3", "fospine1-eth1"], "lowerlayerdown")
    out = run_cli(network, tmp_path, ["link_restore foleaf0-eth3"])
    assert "foleaf0~fospine1 up" in out
    assert becomes(["foleaf0-eth3", "fospine1-eth1"], "up")
    out = run_cli(network, tmp_path, ["links"])
    assert "foleaf0~fospine1" in out and "up/up" in out


def test_link_drop_attaches_and_removes_the_silent_drop(network, tmp_path):
    out = run_cli(network, tmp_path, ["link_drop foleaf1 fospine0 30"])
    assert "drops 30% silently" in out
    assert has_drop_filter("foleaf1-eth2") and has_drop_filter("fospine0-eth2")
    assert operstate("foleaf1-eth2") == "up"
    run_cli(network, tmp_path, ["link_drop foleaf1 fospine0 0"])
    assert not has_drop_filter("foleaf1-eth2") and not has_drop_filter("fospine0-eth2")


def test_switch_fail_darkens_every_link_and_bad_names_are_reported(network, tmp_path):
    out = run_cli(network, tmp_path, ["switch_fail fospine0", "link_fail foleaf0 nobody",
                                      "link_drop foleaf0 fospine0 lots", "events"])
    try:
        assert becomes([f"fospine0-eth{p}" for p in (1, 2)], "lowerlayerdown")
        assert "no node named 'nobody'" in out
        assert "usage: link_drop NODE1 NODE2 PERCENT" in out
        assert "x~y down (port)" in out
    finally:
        run_cli(network, tmp_path, ["switch_restore fospine0"])
    assert becomes(["fospine0-eth1", "fospine0-eth2"], "up")
