"""Hosts and links of a fabric in Mininet: names, addresses, static ARP, routes, shaping, real
frames on the wire, and a teardown that leaves nothing behind.

These tests use the hosts-and-links mode (`target=None`): switch ports exist in the root
namespace but no switch program runs, since what is under test here is the network the builder
makes, not a data plane.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from topos_helpers import plan_interfaces, root_interfaces, shifted

from topos import build_fabric
from topos.mininet import FabricNetwork
from topos.mininet.runstate import load_all

pytestmark = [pytest.mark.root, pytest.mark.mininet]


def host_run(net: FabricNetwork, nic: str, argv: list[str]) -> str:
    proc = net.host(nic).popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def capture(intfs: list[str]) -> list[socket.socket]:
    socks = []
    for intf in intfs:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        s.bind((intf, 0))
        s.setblocking(False)
        socks.append(s)
    return socks


def first_udp_frame(socks: list[socket.socket], port: int, timeout: float = 5.0) -> bytes:
    """The first IPv4/UDP frame to `port` seen on any socket (select-driven, no sleeps)."""
    import select

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select(socks, [], [], deadline - time.monotonic())
        for s in ready:
            frame = s.recv(65536)
            if frame[23] == 17 and int.from_bytes(frame[36:38], "big") == port:
                return frame
    raise AssertionError(f"no UDP frame to port {port} within {timeout} s")


def sent_udp_frame(net: FabricNetwork, nic: str, dst_ip: str, payload: str,
                   intfs: list[str]) -> bytes:
    """The frame of one UDP datagram (`payload`, a Python expression) that `nic` sends to
    `dst_ip`:4791, as first seen on one of `intfs`."""
    socks = capture(intfs)
    try:
        host_run(net, nic, [sys.executable, "-c",
                            "import socket; s = socket.socket(socket.AF_INET, "
                            f"socket.SOCK_DGRAM); s.sendto({payload}, ('{dst_ip}', 4791))"])
        return first_udp_frame(socks, 4791)
    finally:
        for s in socks:
            s.close()


def test_hpn7_hosts_and_links(tmp_path) -> None:
    spec = shifted(build_fabric("hpn7"))
    names = plan_interfaces(spec)
    assert root_interfaces(names) == []
    with FabricNetwork(spec, None, run_dir=tmp_path) as net:
        (state,) = load_all(tmp_path)
        hosts = [p for p in state.processes if p.kind == "host"]
        assert len(hosts) == len(spec.host_nics()) and all(p.alive() for p in hosts)

        switch_side = [e.intf for ln in spec.links for e in (ln.a, ln.b)
                       if spec.is_switch(e.node)]
        assert root_interfaces(switch_side) == switch_side
        for ln in spec.links:
            for end in (ln.a, ln.b):
                if spec.is_switch(end.node):
                    mac = Path(f"/sys/class/net/{end.intf}/address").read_text().strip()
                    assert mac == end.mac

        nic = spec.nic("h0n0")
        addr = host_run(net, "h0n0", ["ip", "-br", "addr"])
        assert "h0n0-eth0@" in addr and f"{nic.ip}/32" in addr and "h0n0-eth1@" in addr
        route = host_run(net, "h0n0", ["ip", "route", "show", "default"])
        assert "nexthop dev h0n0-eth0" in route and "nexthop dev h0n0-eth1" in route
        neigh = host_run(net, "h0n0", ["ip", "neigh", "show", "nud", "permanent"])
        others = [n for n in spec.host_nics() if n.name != "h0n0"]
        assert len(neigh.strip().splitlines()) == 2 * len(others)
        for other in others:
            assert f"{other.ip} dev h0n0-eth1 lladdr {other.mac} PERMANENT" in neigh
        assert host_run(net, "h0n0", ["cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"]) == "1\n"
        offloads = host_run(net, "h0n0", ["ethtool", "-k", "h0n0-eth1"])
        for feature in ("tx-checksumming: off", "scatter-gather: off",
                        "tcp-segmentation-offload: off", "generic-receive-offload: off"):
            assert feature in offloads
        tc = host_run(net, "h0n0", ["tc", "qdisc", "show", "dev", "h0n0-eth0"])
        assert "htb 5:" in tc and ("limit 64" in tc)
        tc_class = subprocess.run(["tc", "class", "show", "dev", "ta-s0r0-eth3"],
                                  capture_output=True, text=True, check=True).stdout
        assert "rate 10Mbit" in tc_class

        # A real frame: h0n0 -> h1n0 leaves through one of its two ports, addressed from the
        # static ARP entries (no ARP request), and arrives at the ToR port of that plane.
        dst = spec.nic("h1n0")
        frame = sent_udp_frame(net, "h0n0", dst.ip, "b'fabric'", ["ta-s0r0-eth1", "tb-s0r0-eth1"])
        assert frame[0:6] == bytes.fromhex(dst.mac.replace(":", ""))
        assert frame[6:12] == bytes.fromhex(nic.mac.replace(":", ""))
        assert socket.inet_ntoa(frame[26:30]) == nic.ip
        assert socket.inet_ntoa(frame[30:34]) == dst.ip

    assert root_interfaces(names) == []
    assert not any(p.alive() for p in state.processes)
    assert load_all(tmp_path) == []


@pytest.mark.parametrize("fabric", ["aipod", "bigraph", "leafspine", "fattree"])
def test_other_fabrics_come_up_and_go(fabric: str, tmp_path) -> None:
    spec = shifted(build_fabric(fabric))
    with FabricNetwork(spec, None, run_dir=tmp_path) as net:
        assert len(net.net.hosts) == len(spec.host_nics())
        assert len(root_interfaces(plan_interfaces(spec))) == sum(
            1 for ln in spec.links for e in (ln.a, ln.b) if spec.is_switch(e.node))
        last = spec.host_nics()[-1]
        addr = host_run(net, last.name, ["ip", "-4", "-o", "addr", "show", "dev",
                                         f"{last.name}-eth0"])
        assert f"{last.ip}/32" in addr
    assert root_interfaces(plan_interfaces(spec)) == []
    assert load_all(tmp_path) == []


def test_a_link_mtu_is_set_on_both_ends_and_the_patch_and_carries_whole_frames(tmp_path) -> None:
    """`Link.mtu` (FabricSpec.with_mtu): every interface of the link has it, the patch between
    them too, and a 4096-byte datagram crosses as one 4138-byte frame, not fragments."""
    from topos.mininet.patch import patch_names

    spec = shifted(build_fabric("leafspine")).with_mtu(4200)
    with FabricNetwork(spec, None, run_dir=tmp_path) as net:
        for ln in spec.links:
            switch_end = ln.a if spec.is_switch(ln.a.node) else ln.b
            for intf in (switch_end.intf, *patch_names(ln.a.intf)):
                assert Path(f"/sys/class/net/{intf}/mtu").read_text().strip() == "4200", intf
        nic = spec.host_nics()[0]
        (link,) = spec.links_of(nic.name)
        host_end, tor_end = link.end(nic.name), link.other(nic.name)
        assert host_run(net, nic.name, ["cat", f"/sys/class/net/{host_end.intf}/mtu"]) == "4200\n"
        dst = next(n for n in spec.host_nics() if n.name != nic.name)
        frame = sent_udp_frame(net, nic.name, dst.ip, "bytes(4096)", [tor_end.intf])
        assert len(frame) == 14 + 20 + 8 + 4096
        assert int.from_bytes(frame[20:22], "big") & 0x3FFF == 0  # not a fragment
