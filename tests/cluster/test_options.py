"""Cluster options and the switch from FabricNetwork to ClusterNetwork (nothing is started)."""

from __future__ import annotations

import pytest

from topos import build_fabric
from topos.mininet import FabricNetwork
from topos.mininet.cluster import ClusterNetwork, ClusterOptions, with_cluster
from topos.mininet.cluster_nodes import with_option
from topos.mininet.cluster_servers import ClusterError


def test_inside_with_cluster_a_fabric_network_spreads_over_the_servers() -> None:
    spec = build_fabric("leafspine")
    options = ClusterOptions("localhost,server2", placement="switch")
    with with_cluster(options):
        net = FabricNetwork(spec, None)
        assert isinstance(net, ClusterNetwork)
        assert net.options is options
        assert set(net.placement.where.values()) == {"localhost", "server2"}
        assert net.placement.policy == "switch"
    assert type(FabricNetwork(spec, None)) is FabricNetwork


def test_one_local_server_stays_a_plain_network() -> None:
    with with_cluster(ClusterOptions(["localhost"])):
        assert type(FabricNetwork(build_fabric("leafspine"), None)) is FabricNetwork


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
