"""Queue-aware DLB (`p4src/qdlb.p4`) on the p4switch engine: egress queues drained by the test,
so the depth each dequeue leaves behind is what the switch sees."""

from __future__ import annotations

from collections import Counter

from scapy.layers.inet import IP

from experiments.framework.engine_switch import LbSwitch, roce_frame
from traffic.frames import build_frame, icrc_ok, strip_tag
from traffic.headers import TAG_FLAG_HOST, TAG_FLAG_SWITCH, TAG_IP_PROTO, WRITE_ONLY, ReorderTag

PORTS = [1, 2, 3, 4]


def run_slow_port(switch: LbSwitch, ticks: int = 300, slow_every: int = 4) -> Counter:
    """Three packets a tick from two flows; ports 2-4 send one packet a tick, port 1 one every
    `slow_every` ticks (a slower link): 3 of the 3.25 packets/tick the ports can carry."""
    sent: Counter = Counter()
    for t in range(ticks):
        for k in range(3):
            sent[switch.enqueue(roce_frame(50000 + k % 2, psn=t), ingress_port=9)] += 1
        for port in PORTS[1:]:
            switch.dequeue(port)
        if t % slow_every == 0:
            switch.dequeue(1)
    return sent


def test_a_queue_aware_pick_follows_load():
    aware = LbSwitch("qdlb", PORTS, host_ports=[9])
    sent = run_slow_port(aware)
    # Port 1 drains 75 packets in 300 ticks: the switch sends it about that, not a quarter.
    assert sent[1] < 0.15 * sum(sent.values()), sent
    assert aware.depth(1) <= 4, f"the slow port's queue grew: {aware.depth(1)}"
    assert all(sent[p] > 0.25 * sum(sent.values()) for p in PORTS[1:]), sent


def test_round_robin_spraying_is_blind_to_the_slow_port():
    blind = LbSwitch("qdlb", PORTS, host_ports=[9])
    blind.set_queue_aware(False)
    sent = run_slow_port(blind)
    assert sorted(sent.values()) == [225] * 4, sent
    assert blind.depth(1) == 225 - 75, "round robin keeps filling the slow port"
    dlb = LbSwitch("dlb", PORTS, host_ports=[9])  # the round-robin mode decides the same way
    assert sorted(run_slow_port(dlb).values()) == [225] * 4


def test_under_even_load_every_member_is_used_evenly():
    switch = LbSwitch("qdlb", PORTS, host_ports=[9])
    sent: Counter = Counter()
    for t in range(200):
        sent[switch.enqueue(roce_frame(50000, psn=t), ingress_port=9)] += 1
        for port in PORTS:
            switch.dequeue(port)
    assert set(sent) == set(PORTS)
    assert max(sent.values()) - min(sent.values()) <= 2, sent


def test_a_loaded_port_gets_nothing_until_it_drains():
    switch = LbSwitch("qdlb", [1, 2], host_ports=[9])
    for t in range(16):  # every entropy's member learnt (16 choices), queues empty
        port = switch.enqueue(roce_frame(50000, psn=t), ingress_port=9)
        switch.dequeue(port)
    for t in range(10):  # port 1 stops draining (a paused or degraded link)
        switch.enqueue(roce_frame(50000, psn=100 + t), ingress_port=9)
        switch.dequeue(2)
    assert switch.depth(1) <= 1, "one packet (round robin's next pick) at most, then none"
    choices = []
    for t in range(10):
        choices.append(switch.enqueue(roce_frame(50000, psn=200 + t), ingress_port=9))
        switch.dequeue(2)
    assert set(choices) == {2}, choices
    while switch.depth(1):
        switch.dequeue(1)
    later = {switch.enqueue(roce_frame(50000, psn=300 + t), ingress_port=9) for t in range(4)}
    assert later == {1, 2}, "a drained port is used again"


def test_qdlb_tags_like_dlb_and_keeps_a_host_tag():
    switch = LbSwitch("qdlb", [1, 2], host_ports=[9])
    _, out = switch.forward(roce_frame(50000), ingress_port=9)
    tag = IP(out[14:])[ReorderTag]
    assert tag.flags == TAG_FLAG_SWITCH and tag.seq == 0
    assert icrc_ok(strip_tag(out))
    from traffic.frames import Endpoints

    ep = Endpoints(src_mac="02:00:0a:00:00:01", dst_mac="02:53:00:01:00:01",
                   src_ip="10.0.0.1", dst_ip="10.0.1.1", sport=50001, dqpn=0x100)
    host_tagged = build_frame(ep, WRITE_ONLY, psn=0, payload=bytes(64), dlen=64, tag=(7, 41))
    _, out = switch.forward(host_tagged, ingress_port=9)
    ip = IP(out[14:])
    assert ip.proto == TAG_IP_PROTO
    assert ip[ReorderTag].flags == TAG_FLAG_HOST and ip[ReorderTag].seq == 41
    assert len(out) == len(host_tagged)
