"""The flowlet and DLB programs on the p4switch engine, packet by packet, with a set clock."""

from __future__ import annotations

from collections import Counter

import pytest
from scapy.layers.inet import IP

from experiments.framework.engine_switch import LbSwitch, colliding_sports, roce_frame
from traffic.frames import icrc_ok, strip_tag
from traffic.headers import TAG_FLAG_SWITCH, TAG_IP_PROTO, ReorderTag

GAP_US = 20_000


def test_a_flowlet_keeps_its_path_inside_the_gap():
    switch = LbSwitch("flowlet", [1, 2, 3, 4], seed=0x1234, flowlet_gap_us=GAP_US)
    for sport in range(50000, 50016):
        frame = roce_frame(sport)
        ports = set()
        for _ in range(20):
            switch.now_us += GAP_US // 4
            ports.add(switch.egress_port(frame))
        assert len(ports) == 1, f"flow {sport} changed path inside one flowlet: {ports}"


def test_new_flowlets_after_gaps_spread_over_every_path():
    """Regression: the id alone sits in the last field of the CRC-16 selector key and reaches
    only one of the hash's two low bits, so flowlets used 2 of 4 paths."""
    for ports in ([1, 2], [1, 2, 3], [1, 2, 3, 4], list(range(1, 9))):
        switch = LbSwitch("flowlet", ports, seed=0x1234, flowlet_gap_us=GAP_US)
        frame = roce_frame(50000)
        used = Counter()
        for _ in range(32 * len(ports)):
            switch.now_us += 2 * GAP_US
            used[switch.egress_port(frame)] += 1
        assert set(used) == set(ports), f"{len(ports)} paths: flowlets used only {sorted(used)}"
        assert min(used.values()) >= 8, f"{len(ports)} paths: lopsided {dict(used)}"


def test_the_gap_is_a_runtime_parameter():
    frame = roce_frame(50001)
    short = LbSwitch("flowlet", [1, 2, 3, 4], flowlet_gap_us=1_000)
    long = LbSwitch("flowlet", [1, 2, 3, 4], flowlet_gap_us=1_000_000)
    seen_short, seen_long = set(), set()
    for _ in range(40):
        for switch, seen in ((short, seen_short), (long, seen_long)):
            switch.now_us += 5_000
            seen.add(switch.egress_port(frame))
    assert len(seen_long) == 1
    assert len(seen_short) > 1


def test_dlb_sprays_one_flow_round_robin_over_every_path():
    switch = LbSwitch("dlb", [1, 2, 3], host_ports=[9])
    ports = [switch.egress_port(roce_frame(50000, psn=i), ingress_port=9) for i in range(12)]
    assert sorted(Counter(ports).values()) == [4, 4, 4]
    assert all(ports[i] != ports[i + 1] for i in range(11)), ports


def test_dlb_tags_at_the_host_port_only_and_numbers_each_flow():
    switch = LbSwitch("dlb", [1, 2], host_ports=[9])
    seqs = {}
    for sport in (50000, 50001):
        for psn in range(5):
            _, out = switch.forward(roce_frame(sport, psn=psn), ingress_port=9)
            ip = IP(out[14:])
            assert ip.proto == TAG_IP_PROTO
            tag = ip[ReorderTag]
            assert tag.next_proto == 17 and tag.flags == TAG_FLAG_SWITCH
            seqs.setdefault(sport, []).append(tag.seq)
            assert icrc_ok(strip_tag(out)), "the tag broke the packet's ICRC once stripped"
            assert ip.len == len(out) - 14
            fixed = ip.copy()
            del fixed.chksum
            assert IP(bytes(fixed)).chksum == ip.chksum, "IPv4 checksum not updated"
    assert seqs == {50000: [0, 1, 2, 3, 4], 50001: [0, 1, 2, 3, 4]}
    _, passed = switch.forward(roce_frame(50002), ingress_port=1)  # from a fabric port
    assert IP(passed[14:]).proto == 17


def test_a_tagged_packet_is_not_tagged_again():
    first = LbSwitch("dlb", [1, 2], host_ports=[9])
    second = LbSwitch("dlb", [1, 2], host_ports=[9])
    _, once = first.forward(roce_frame(50000), ingress_port=9)
    _, twice = second.forward(once, ingress_port=9)
    assert len(twice) == len(once)
    assert IP(twice[14:])[ReorderTag].payload.name == "UDP"


def test_colliding_sports_share_one_ecmp_port():
    ports = [1, 2]
    pair = next(colliding_sports(ports, 0xBEEF, src_ip="10.0.0.1", dst_ip="10.0.1.1"))
    switch = LbSwitch("ecmp", ports, seed=0xBEEF)
    out = {switch.egress_port(roce_frame(s, src_ip="10.0.0.1", dst_ip="10.0.1.1")) for s in pair}
    assert len(out) == 1


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown load-balancing mode 'spray'"):
        LbSwitch("spray", [1, 2])
