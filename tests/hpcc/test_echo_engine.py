"""The INT echo (traffic.echo, format traffic.headers.IntEcho) through the real ecmp.p4 pipeline
in the p4switch engine: a data packet asking for INT crosses two switches, one with a queue;
the ACK that echoes its records crosses them back unchanged (switches do not add to an echo),
its ICRC checks, and the sender reads the same records the receiver stripped."""

from __future__ import annotations

import pytest
from scapy.layers.l2 import Ether

from controller.inband import configure_int
from experiments.framework.engine_switch import EngineSwitch, load_program
from traffic.echo import add_echo, int_echo_of, read_echo
from traffic.frames import Endpoints, build_frame, icrc_ok
from traffic.headers import ACK, WRITE_ONLY, IntEcho
from traffic.inband import strip_int
from traffic.wire import INT_HOP_LEN, INT_SHIM_LEN, roce_layout

DATA = Endpoints("02:00:0a:00:00:01", "02:53:00:01:00:01", "10.0.0.1", "10.0.1.1", 49500, 0x42)
BACK = Endpoints("02:53:00:01:00:01", "02:00:0a:00:00:01", "10.0.1.1", "10.0.0.1", 49500, 0x42,
                 dscp=48, ecn=0)
PATH = ((31, 3, 40), (32, 4, 20))  # (switch id, egress port of its route, link Mb/s)


def _switch(switch_id: int, port: int, mbps: int) -> EngineSwitch:
    sw = EngineSwitch(load_program("ecmp"), [port], label=f"switch {switch_id}")
    configure_int(sw.client, sw.client.schema, switch_id, {port: mbps})
    return sw


def test_an_ack_echoes_the_records_and_switches_leave_the_echo_alone() -> None:
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    first, second = (_switch(*hop) for hop in PATH)
    first.now_us, second.now_us = 700, 900
    frames = [build_frame(DATA, WRITE_ONLY, psn, bytes(256), dlen=256, int_hops=5)
              for psn in range(3)]
    for frame in frames:  # three packets queue at the first switch; the first leaves 2 behind
        assert first.enqueue(frame, ingress_port=1) == 3
    out = first.dequeue(3)
    assert out is not None
    _, data = second.forward(out, ingress_port=2)

    echo = int_echo_of(data)
    assert echo is not None and len(echo) == INT_SHIM_LEN + 2 * INT_HOP_LEN
    plain, report = strip_int(data)
    assert report is not None and icrc_ok(plain)
    assert [(h.switch_id, h.egress_port, h.link_mbps, h.qdepth) for h in report.hops] == \
        [(31, 3, 40, 2), (32, 4, 20, 0)]

    ack = add_echo(build_frame(BACK, ACK, psn=0), echo)
    assert icrc_ok(ack)
    for sw in (second, first):  # back through the switches (their route covers 10.0.0.0/8)
        sw.now_us += 100
        _, ack = sw.forward(ack, ingress_port=9)
    assert icrc_ok(ack)
    got = read_echo(ack, roce_layout(ack))
    assert got is not None and got.hops == report.hops  # exactly what the receiver stripped
    decoded = Ether(ack)[IntEcho]  # scapy reads the same format
    assert decoded.hop_count == 2
    assert [h.switch_id for h in decoded.hops] == [32, 31]  # on the wire: newest first
    assert read_echo(build_frame(BACK, ACK, psn=0), roce_layout(ack)) is None  # a plain ACK
