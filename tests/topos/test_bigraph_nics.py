"""BiGraph with several NICs per server: the NIC slots of every switch stay, each server spans
both groups, and the BiGraph distances hold."""

from __future__ import annotations

from collections import Counter

import pytest

from topos import build_fabric
from topos.analysis import shortest_paths


def test_servers_with_four_nics_reach_both_groups():
    spec = build_fabric("bigraph", nics_per_server=4)
    assert len(spec.hosts) == 4 and all(len(h.nics) == 4 for h in spec.hosts)
    per_switch = Counter(spec.attachments(n.name)[0][0] for n in spec.host_nics())
    assert set(per_switch.values()) == {2}  # M = 2 NIC slots per switch, as with one NIC each
    for host in spec.hosts:
        groups = [spec.switch(spec.attachments(n.name)[0][0]).group for n in host.nics]
        assert groups == [0, 1, 0, 1]
        assert [n.rail for n in host.nics] == [0, 1, 2, 3]
    a, b = spec.hosts[0].nics[0].name, spec.hosts[1].nics[1].name  # upper to lower
    assert len(shortest_paths(spec, a, b)) == 1 and len(shortest_paths(spec, a, b)[0]) == 2


def test_one_nic_per_server_is_the_default_layout():
    assert build_fabric("bigraph") == build_fabric("bigraph", nics_per_server=1)
    assert len(build_fabric("bigraph").hosts) == 16


@pytest.mark.parametrize("bad", [3, 0, 32])
def test_nic_counts_that_do_not_split_are_refused(bad):
    with pytest.raises(ValueError, match="nics_per_server"):
        build_fabric("bigraph", nics_per_server=bad)
