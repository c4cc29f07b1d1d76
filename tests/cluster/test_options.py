"""Cluster options and the choice of FabricNetwork or ClusterNetwork (nothing is started)."""

from __future__ import annotations

import pytest

from topos import build_fabric
from topos.mininet import FabricNetwork
from topos.mininet.cluster import ClusterNetwork, ClusterOptions
from topos.mininet.cluster_nodes import with_option
from topos.mininet.cluster_servers import ClusterError
from topos.mininet.network import fabric_network


def test_cluster_options_make_the_network_spread_over_the_servers() -> None:
    spec = build_fabric("leafspine")
    options = ClusterOptions("localhost,server2", placement="switch")
    net = fabric_network(spec, None, cluster=options)
    assert isinstance(net, ClusterNetwork)
    assert net.options is options
    assert set(net.placement.where.values()) == {"localhost", "server2"}
    assert net.placement.policy == "switch"
    assert type(fabric_network(spec, None)) is FabricNetwork
    assert type(FabricNetwork(spec, None)) is FabricNetwork  # no options, no cluster


def test_one_local_server_stays_a_plain_network() -> None:
    assert not ClusterOptions(["localhost"]).spreads()
    net = fabric_network(build_fabric("leafspine"), None, cluster=ClusterOptions(["localhost"]))
    assert type(net) is FabricNetwork


def test_a_cluster_network_needs_options() -> None:
    with pytest.raises(ClusterError, match="needs ClusterOptions"):
        ClusterNetwork(build_fabric("leafspine"), None)


def test_a_link_mtu_off_this_machine_is_refused_by_name() -> None:
    """Only this machine's links get an MTU (the tunnels between servers keep theirs): a spec
    that sets one elsewhere is refused before anything starts, naming the links."""
    spec = build_fabric("leafspine").with_mtu(4200)
    with pytest.raises(ClusterError, match=r"link MTUs are set on this machine's links only; "
                                           r"\d+ link\(s\) on other servers"):
        fabric_network(spec, None, cluster=ClusterOptions("localhost,server2",
                                                         placement="switch"))
    assert type(fabric_network(spec, None, cluster=ClusterOptions(["localhost"]))) \
        is FabricNetwork


def test_bad_options_are_rejected() -> None:
    with pytest.raises(ClusterError, match="unknown tunnel 'vxlan'"):
        ClusterOptions("localhost,b", tunnel="vxlan")
    with pytest.raises(ValueError, match="named twice"):
        ClusterOptions("a,a")


def test_remote_switch_argv_listens_at_the_server_address() -> None:
    argv = ["p4switch", "--thrift-port", "9090", "--no-p4", "--", "--grpc-server-addr",
            "127.0.0.1:9559"]
    argv = with_option(argv, "--grpc-server-addr", "10.1.1.2:9559")
    assert argv[-1] == "10.1.1.2:9559" and argv[2] == "9090"
