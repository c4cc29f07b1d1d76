"""The traffic tools inside Mininet hosts (processes in their own namespaces, static ARP)."""

from __future__ import annotations

import secrets

import pytest

from traffic.agent import Agent
from traffic.hosts import MininetHost

pytestmark = [pytest.mark.root, pytest.mark.mininet]


@pytest.fixture
def mininet_hosts():
    from mininet.net import Mininet

    tag = secrets.token_hex(1)
    net = Mininet(topo=None, controller=None, build=False, autoSetMacs=False)
    try:
        hosts = [net.addHost(f"tr{tag}h{i}", ip=f"10.81.0.{i + 1}/24") for i in range(2)]
        net.addLink(hosts[0], hosts[1])
        net.build()
        yield net, hosts
    finally:
        net.stop()


def test_sender_and_receiver_in_mininet_hosts(mininet_hosts):
    net, (h0, h1) = mininet_hosts
    net.staticArp()
    a, b = MininetHost(h0), MininetHost(h1)
    assert a.iface == h0.defaultIntf().name and b.ip == "10.81.0.2"
    size = 128 * 1024
    with Agent(b) as rx, Agent(a) as tx:  # workers in the Mininet hosts' namespaces
        rx.start_recv({"iface": b.iface, "duration_s": 30, "idle_timeout_s": 2.0,
                       "expect": [{"src_ip": a.ip, "qpn": 5, "bytes": size}]})
        tx.start_send({"iface": a.iface, "qps": [{"dst_ip": b.ip, "qpn": 5,
                                                  "message_bytes": size, "rate_bps": 20e6}]})
        sent, got = tx.result(60), rx.result(60)
    assert sent["payload_bytes"] == got["bytes"] == size
    assert [q["lost"] for q in got["qps"]] == [0]
