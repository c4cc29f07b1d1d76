"""Placement of fabrics over servers: whole rails/segments per server, fewest crossing links."""

from __future__ import annotations

import pytest

from topos import build_fabric
from topos.placement import PlacementError, balance_ratio, parse_servers, place

TWO = ["localhost", "server2"]


def test_aipod_keeps_each_rail_on_one_server() -> None:
    spec = build_fabric("aipod")
    placement = place(spec, TWO)
    assert placement.unit == "rail"
    for sw in spec.switches:
        if sw.rail is not None:
            mates = {placement.server_of(o.name) for o in spec.switches if o.rail == sw.rail}
            assert mates == {placement.server_of(sw.name)}, f"rail {sw.rail} is split"
    # only spine-superspine links cross: half of them
    crossing = placement.crossing(spec)
    assert len(crossing) == 8
    assert all({spec.switch(ln.a.node).role, spec.switch(ln.b.node).role}
               == {"spine", "superspine"} for ln in crossing)
    assert balance_ratio(spec, placement) == 1.0


def test_hpn7_keeps_rails_together_and_nics_with_their_tors() -> None:
    spec = build_fabric("hpn7")
    placement = place(spec, TWO)
    for nic in spec.host_nics():
        tors = {placement.server_of(sw) for sw, _ in spec.attachments(nic.name)}
        assert tors == {placement.server_of(nic.name)}, nic.name
    assert len(placement.crossing(spec)) < len(place(spec, TWO, "switch").crossing(spec))


def test_leafspine_splits_leaves_evenly_and_spines_follow() -> None:
    spec = build_fabric("leafspine")  # 4 leaves, 2 spines, 2 NICs per leaf
    placement = place(spec, TWO)
    assert [placement.server_of(f"leaf{i}") for i in range(4)] == [
        "localhost", "localhost", "server2", "server2"]
    assert {placement.server_of("spine0"), placement.server_of("spine1")} == set(TWO)
    # every NIC-leaf link stays inside a server; each spine reaches the far half
    assert len(placement.crossing(spec)) == 4
    assert all(spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)
               for ln in placement.crossing(spec))


@pytest.mark.parametrize("fabric", ["hpn7", "aipod", "bigraph", "leafspine", "fattree"])
def test_every_node_is_placed_and_fabric_beats_switch_by_switch(fabric: str) -> None:
    spec = build_fabric(fabric)
    servers = ["a", "b", "c"]
    for policy in ("fabric", "switch"):
        placement = place(spec, servers, policy)
        nodes = {s.name for s in spec.switches} | {n.name for n in spec.host_nics()}
        assert set(placement.where) == nodes
        assert set(placement.where.values()) <= set(servers)
    assert len(place(spec, servers).crossing(spec)) <= \
        len(place(spec, servers, "switch").crossing(spec))


def test_one_server_has_no_crossing_links() -> None:
    spec = build_fabric("aipod")
    placement = place(spec, ["localhost"])
    assert not placement.crossing(spec) and not placement.is_split()


def test_describe_names_servers_and_tunnels() -> None:
    spec = build_fabric("leafspine")
    text = place(spec, TWO).describe(spec)
    assert "4 of 16 links cross servers" in text
    assert "localhost: 3 switches, 4 NICs" in text
    assert "localhost <-> server2: 4 tunnel(s)" in text


@pytest.mark.parametrize("text, message", [
    ("localhost,,b", "empty server name"),
    ("a,b,a", "named twice: a"),
])
def test_bad_server_lists_are_rejected(text: str, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        parse_servers(text)


def test_unknown_policy_is_rejected() -> None:
    with pytest.raises(PlacementError, match="unknown placement 'random'"):
        place(build_fabric("leafspine"), TWO, "random")


def test_show_prints_the_placement(tmp_path, capsys) -> None:
    from fabric_lab.cli import main

    assert main(["show", "aipod", "--servers", "localhost,gpu2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "placement over 2 server(s) (fabric, whole rails per server): 8 of 48 links" in out
    assert "localhost <-> gpu2: 8 tunnel(s)" in out
    assert main(["show", "aipod", "--servers", "a,a", "--out", str(tmp_path)]) == 2
