"""In-band telemetry through the real pipelines in the p4switch engine (no processes, no root):
a RoCEv2 packet that asks for INT crosses three switches (leaf, spine, leaf) of each
load-balancing program, each programmed by the controller's own code (the route, and
`controller.inband` for the switch id and link rates); the records the receiving host strips
must name the path, the ports, each switch's clock and queue, and still leave a packet whose
ICRC checks."""

from __future__ import annotations

import pytest
from scapy.layers.l2 import Ether

from controller.inband import configure_int
from experiments.framework.engine_switch import EngineSwitch, load_program
from mechanisms import LB_MODES
from mechanisms import int as inband
from traffic.frames import Endpoints, build_frame, icrc_ok
from traffic.headers import INT_IP_PROTO, WRITE_ONLY, IntHop, IntShim, ReorderTag
from traffic.inband import HopRecord, strip_int
from traffic.wire import INT_HOP_LEN, IP_PROTO_AT

HOST_PORT = 1
# (switch id, ingress port, the one egress port of its route, that link's rate in Mb/s)
PATH = ((11, HOST_PORT, 3, 100), (21, 5, 2, 40), (12, 4, 6, 10))
EP = Endpoints("02:00:0a:00:00:01", "02:53:00:01:00:01", "10.0.0.1", "10.0.1.1", 49500, 0x42)


def _switches(mode: str) -> list[EngineSwitch]:
    out = []
    for switch_id, _ingress, egress, mbps in PATH:
        sw = EngineSwitch(load_program(mode), [egress], label=f"{mode}.p4 switch {switch_id}",
                          host_ports=[HOST_PORT] if mode in ("dlb", "qdlb") else ())
        assert configure_int(sw.client, sw.client.schema, switch_id, {egress: mbps}) == 2
        assert configure_int(sw.client, sw.client.schema, switch_id, {egress: mbps}) == 0
        out.append(sw)
    return out


def _frame(psn: int = 0, max_hops: int = 5, payload: int = 200) -> bytes:
    return build_frame(EP, WRITE_ONLY, psn, bytes(payload), dlen=payload, int_hops=max_hops)


def _through(switches: list[EngineSwitch], frame: bytes, clock_us: int) -> bytes:
    for sw, (_id, ingress, egress, _mbps) in zip(switches, PATH, strict=True):
        sw.now_us = clock_us
        port, frame = sw.forward(frame, ingress_port=ingress)
        assert port == egress
    return frame


@pytest.fixture(scope="module", params=LB_MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def test_records_name_the_path_ports_clock_rate_and_an_idle_queue(mode: str) -> None:
    switches = _switches(mode)
    sent = _frame()
    first = _through(switches, sent, clock_us=1000)
    second = _through(switches, _frame(psn=1), clock_us=2500)

    tagged = mode in ("dlb", "qdlb")  # the first switch tags (before the INT shim)
    assert len(first) == len(sent) + (8 if tagged else 0) + 3 * INT_HOP_LEN
    plain, report = strip_int(first)
    assert report is not None and not report.no_room and report.max_hops == 5
    assert report.path == [switch_id for switch_id, *_ in PATH]
    assert [(h.ingress_port, h.egress_port, h.link_mbps) for h in report.hops] == \
        [(ingress, egress, mbps) for _id, ingress, egress, mbps in PATH]
    assert all(h.egress_ts == 1000 and h.qdepth == 0 and h.hop_latency == 0
               for h in report.hops)
    assert icrc_ok(plain)  # the sender's ICRC, over the packet without tag and records
    assert plain[IP_PROTO_AT] == (253 if tagged else 17)

    # tx_bytes: everything each egress port sent, this packet included, as received there
    _, later = strip_int(second)
    assert later is not None
    got = [(h.tx_bytes, n.tx_bytes) for h, n in zip(report.hops, later.hops, strict=True)]
    grown = [len(sent) + (8 if tagged and i else 0) + i * INT_HOP_LEN for i in range(3)]
    assert [a for a, _ in got] == grown  # the first packet on each port
    assert [b - a for a, b in got] == grown  # the second adds its own length
    assert all(h.egress_ts == 2500 for h in later.hops)

    # scapy reads the same records (newest first on the wire)
    wire = Ether(first)
    assert wire.haslayer(ReorderTag) == tagged
    hops = wire[IntShim].hops
    assert [HopRecord(**{f.name: h.getfieldval(f.name) for f in IntHop.fields_desc})
            for h in reversed(hops)] == list(report.hops)


def test_a_burst_shows_in_the_queue_depth_of_its_hop(mode: str) -> None:
    switches = _switches(mode)
    leaf, spine, _ = switches
    burst = []
    for psn in range(4):
        _, frame = leaf.forward(_frame(psn), ingress_port=PATH[0][1])
        burst.append(frame)
    spine.now_us = 7000
    for frame in burst:  # all four wait in the spine's egress queue, then leave
        assert spine.enqueue(frame, ingress_port=PATH[1][1]) == PATH[1][2]
    assert spine.depth(PATH[1][2]) == 4
    left = [spine.dequeue(PATH[1][2]) for _ in burst]
    depths = []
    for out in left:
        assert out is not None
        _, report = strip_int(out)
        assert report is not None and report.path == [PATH[0][0], PATH[1][0]]
        assert report.hops[0].qdepth == 0  # the leaf's queue was idle
        depths.append(report.hops[1].qdepth)
    assert depths == [3, 2, 1, 0]  # what each departure left behind


def test_no_room_past_max_hops_and_plain_packets_untouched(mode: str) -> None:
    switches = _switches(mode)
    out = _through(switches, _frame(max_hops=2), clock_us=10)
    _, report = strip_int(out)
    assert report is not None and report.no_room
    assert report.path == [PATH[0][0], PATH[1][0]]  # the third switch had no room

    plain = build_frame(EP, WRITE_ONLY, 9, bytes(64), dlen=64)
    out = _through(switches, plain, clock_us=20)
    assert INT_IP_PROTO not in (out[IP_PROTO_AT], Ether(out).payload.proto)
    assert strip_int(out)[1] is None
    assert len(out) == len(plain) + (8 if mode in ("dlb", "qdlb") else 0)


def test_the_mechanism_matches_the_p4_constants() -> None:
    from pathlib import Path

    text = Path(inband.MECHANISM.include).read_text() + (
        Path(inband.MECHANISM.include).parent / "headers.p4").read_text()
    assert f"#define INT_MAX_HOPS {inband.MAX_HOPS}" in text
    assert f"IP_PROTO_INT          = {inband.IP_PROTO};" in text
    assert f"INT_HOP_BYTES = {inband.HOP_BYTES};" in text
    assert inband.HOP_BYTES == INT_HOP_LEN and INT_IP_PROTO == inband.IP_PROTO
