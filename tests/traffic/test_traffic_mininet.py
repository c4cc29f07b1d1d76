"""The traffic tools inside Mininet hosts (processes in their own namespaces, static ARP)."""

from __future__ import annotations

import secrets

import pytest

from traffic.collectives.runner import run_collective
from traffic.collectives.schedule import ring_allreduce
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
    res = run_collective(ring_allreduce(2, 128 * 1024), [a, b], 20e6)
    assert res.complete and len(res.steps) == 2
    assert all(s.lost_packets == 0 for s in res.steps)
