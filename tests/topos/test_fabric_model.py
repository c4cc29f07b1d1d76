"""Addressing plan, validation (every problem reported at once), JSON round trip, model API."""

from __future__ import annotations

import copy
import json

import pytest

from topos import FabricError, FabricSpec, build_fabric, validate
from topos.model import CPU_PORT


def test_addressing_plan(any_fabric: FabricSpec) -> None:
    spec = any_fabric
    assert [sw.device_id for sw in spec.switches] == list(range(1, len(spec.switches) + 1))
    assert [sw.grpc_port for sw in spec.switches] == [9559 + i for i in range(len(spec.switches))]
    assert [sw.thrift_port for sw in spec.switches] == [9090 + i for i in range(len(spec.switches))]
    assert {sw.cpu_port for sw in spec.switches} == {CPU_PORT}
    for sw in spec.switches:
        ports = spec.ports(sw.name)
        assert sorted(ports) == list(range(1, len(ports) + 1)), sw.name
        assert all(intf == f"{sw.name}-eth{p}" and len(intf) <= 15 for p, intf in ports.items())
    for server, host in enumerate(spec.hosts):
        for j, nic in enumerate(host.nics):
            assert nic.ip == f"10.0.{server}.{j + 1}"
            assert nic.mac == "02:00:" + ":".join(f"{int(o):02x}" for o in nic.ip.split("."))
            assert {spec_end.mac for ln in spec.links_of(nic.name)
                    for spec_end in [ln.end(nic.name)]} == {nic.mac}
    # Deterministic: building again gives the same plan.
    assert build_fabric(spec.kind, **spec.params) == spec


def test_switch_port_macs_and_lookups() -> None:
    spec = build_fabric("hpn7")
    tor = spec.switch("ta-s0r0")
    assert tor.device_id == 1 and tor.grpc_addr == "127.0.0.1:9559"
    up = spec.port_to("ta-s0r0", "agga1")
    link = next(ln for ln in spec.links_of("ta-s0r0") if ln.end("ta-s0r0").port == up)
    assert link.end("ta-s0r0").mac == f"02:53:00:01:00:{up:02x}"
    assert spec.port_to("ta-s0r0", "h0n0") == 1
    assert spec.nic_by_ip("10.0.1.2").name == "h1n1"
    with pytest.raises(KeyError, match="no switch named 'zz'"):
        spec.switch("zz")
    graph = spec.to_networkx()
    assert graph.nodes["ta-s0r0"]["kind"] == "switch" and graph.nodes["h0n0"]["kind"] == "nic"
    assert graph.number_of_edges() == len(spec.links)


def test_validate_reports_every_kind_of_problem_together() -> None:
    spec = copy.deepcopy(build_fabric("leafspine"))
    nics = spec.host_nics()
    nics[1].ip = nics[0].ip                                        # duplicate address
    spec.switches[1].device_id = spec.switches[0].device_id        # duplicate device id
    spec.links[0].a.intf = "a-very-long-interface-name"            # name over 15 characters
    clash = next(ln for ln in spec.links if ln.b.node == "spine0")
    clash.b.port = spec.port_to("spine0", "leaf1")                 # port clash on spine0
    spec.links[-1].b.node = "ghost"                                # dangling link
    with pytest.raises(FabricError) as err:
        validate(spec)
    text = str(err.value)
    assert len(err.value.problems) >= 5
    for needle in ["duplicate IPv4 address '10.0.0.1'", "duplicate switch device id 1",
                   "'a-very-long-interface-name' is 26 characters", "port clash: spine0 port",
                   "dangling: no switch or NIC named 'ghost'"]:
        assert needle in text, needle


def test_validate_each_problem_alone() -> None:
    base = build_fabric("bigraph")
    cases = {
        "duplicate node name": lambda s: setattr(s.switches[1], "name", s.switches[0].name),
        "duplicate NIC MAC": lambda s: setattr(s.host_nics()[3], "mac", s.host_nics()[2].mac),
        "duplicate gRPC port": lambda s: setattr(s.switches[2], "grpc_port", 9559),
        "out of range": lambda s: setattr(s.links[0].b, "port", CPU_PORT),
        "is not connected": lambda s: s.links.pop(0),
        "must be > 0": lambda s: setattr(s.links[0], "rate_mbps", 0),
        "mtu must be >= 1280 and <= 65535 bytes, not 1000":
            lambda s: setattr(s.links[0], "mtu", 1000),
    }
    for needle, corrupt in cases.items():
        spec = copy.deepcopy(base)
        corrupt(spec)
        with pytest.raises(FabricError, match=needle):
            validate(spec)
    assert validate(base) is base


def test_json_round_trip_is_exact(any_fabric: FabricSpec, tmp_path) -> None:
    text = any_fabric.to_json()
    again = FabricSpec.from_json(text)
    assert again == any_fabric
    assert again.to_json() == text
    path = tmp_path / "fabric.json"
    path.write_text(text)
    assert FabricSpec.from_json(path.read_text()) == any_fabric
    assert json.loads(text)["schema"] == 1


def test_with_mtu_sets_every_link_and_survives_json() -> None:
    spec = build_fabric("leafspine")
    jumbo = spec.with_mtu(4200)
    assert {ln.mtu for ln in jumbo.links} == {4200} and {ln.mtu for ln in spec.links} == {None}
    assert FabricSpec.from_json(jumbo.to_json()) == jumbo
    assert validate(jumbo) is jumbo


def test_json_rejects_unknown_schema() -> None:
    data = build_fabric("leafspine").to_dict()
    data["schema"] = 99
    with pytest.raises(ValueError, match="schema 99"):
        FabricSpec.from_dict(data)
