"""Host specs as the command line takes them: named namespaces and process namespaces."""

from __future__ import annotations

import subprocess
import sys

import pytest

from traffic.agent import Agent
from traffic.hosts import HostSpecError, NetnsHost, PidHost, host_from_spec

pytestmark = pytest.mark.root


def test_netns_and_pid_specs_resolve_interface_and_address(pair_net):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    ha = host_from_spec(f"x=netns:{a.netns}")
    assert isinstance(ha, NetnsHost) and (ha.name, ha.ip, ha.iface) == ("x", a.ip, a.iface)
    # A process living in b's namespace (ip netns exec execs it: same pid, once it printed).
    holder = subprocess.Popen(["ip", "netns", "exec", b.netns, sys.executable, "-c",
                               "import sys; print('in', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "in"
        hb = host_from_spec(f"y=pid:{holder.pid}:{b.iface}")
        assert isinstance(hb, PidHost) and (hb.ip, hb.iface) == (b.ip, b.iface)
        with Agent(hb) as rx, Agent(ha) as tx:  # the workers really run in those namespaces
            rx.start_recv({"iface": hb.iface, "expect": [{"src_ip": a.ip, "qpn": 3,
                                                          "bytes": 4096}], "duration_s": 30})
            tx.start_send({"iface": ha.iface, "qps": [{"dst_ip": hb.ip, "qpn": 3,
                                                       "message_bytes": 4096}]})
            assert tx.result(30)["payload_bytes"] == rx.result(30)["bytes"] == 4096
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize(("spec", "message"), [
    ("x", "bad host"),
    ("x=docker:abc", "bad host"),
    ("x=netns:trnope-ns", "unknown host 'x'"),
    ("x=pid:999999999", "unknown host 'x'"),
])
def test_bad_specs(spec, message):
    with pytest.raises(HostSpecError, match=message):
        host_from_spec(spec)


def test_interface_without_address(pair_net):
    a = pair_net.hosts["a"]
    with pytest.raises(HostSpecError, match="no IPv4 address on lo"):
        host_from_spec(f"x=netns:{a.netns}:lo")
