"""Switch ports with and without PACKET_MMAP rings, on real veth pairs: the same frames in the
same order either way, whole jumbo frames past the ring's 2 KiB slots, 802.1Q tags put back,
refused transmissions counted and never sent later, kernel drops when the ring is full.

Mode "c-rings" runs the same tests on the C data plane's ring code (p4switch/cdp/c/ports.c)."""

from __future__ import annotations

import json
import select
import subprocess
import time

import pytest
from sw_netenv import drain, raw_socket, recv_frames, run

from p4switch.switch.ports import RawPort
from topos.mininet.failures import drop_program

pytestmark = pytest.mark.root  # veth pairs and raw sockets

MODES = {"rings": {}, "syscalls": {"rx_ring": 0, "tx_ring": 0}, "c-rings": {}}


def open_port(mode: str, iface: str):
    """Port 1 on `iface` in `mode`: a RawPort, or (c-rings) one whose I/O is the C code's."""
    port = RawPort(1, iface, **MODES[mode])
    return open_c(port) if mode == "c-rings" else port


def open_c(port: RawPort):
    """`port` with its rings handed to the C code (skips where it cannot be built)."""
    from p4switch.cdp.ports import CRingPort
    from p4switch.native import NativeUnavailable

    try:
        return CRingPort(port)
    except NativeUnavailable as e:
        port.close()
        pytest.skip(f"the C data plane cannot be built here: {e}")
SRC, DST = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def frame(size: int, seq: int) -> bytes:
    body = seq.to_bytes(4, "big") + bytes(size - 18)
    return DST + SRC + b"\x88\xb5" + body  # local experimental ethertype


def receive(port: RawPort, count: int, timeout: float = 5.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got.extend(port.recv_batch())
        if len(got) < count:
            time.sleep(0.005)
    return got


@pytest.fixture
def wire(net):
    """(host namespace, host-side socket, switch interface) with a 9000-byte MTU."""
    ns = net.host("h")
    sw_if = net.link(ns, "eth0", 1)
    run("ip", "link", "set", sw_if, "mtu", "9000")
    run("ip", "-n", ns, "link", "set", "eth0", "mtu", "9000")
    sock = raw_socket(ns, "eth0")
    yield ns, sock, sw_if
    sock.close()


@pytest.mark.parametrize("mode", MODES)
def test_frames_arrive_whole_and_in_order_both_ways(wire, mode):
    _, host, sw_if = wire
    port = open_port(mode, sw_if)
    try:
        if mode != "c-rings":
            assert port.rings == ((True, True) if mode == "rings" else (False, False))
        sizes = [60, 1514, 9000, 64, 2100, 60] * 5  # 2100 and 9000: larger than a slot
        sent = [frame(size, i) for i, size in enumerate(sizes)]
        for f in sent:
            host.send(f)
        assert receive(port, len(sent)) == sent
        drain(host)
        for f in sent:
            assert port.send(f)
        port.flush()
        assert recv_frames(host, 5.0, len(sent)) == sent
        c = port.counters
        assert (c.rx_packets, c.tx_packets, c.tx_errors) == (len(sent), len(sent), 0)
        assert c.tx_bytes == c.rx_bytes == sum(sizes)
    finally:
        port.close()


@pytest.mark.parametrize("mode", MODES)
def test_vlan_tag_is_put_back_and_own_frames_are_not_received(wire, mode):
    _, host, sw_if = wire
    port = open_port(mode, sw_if)
    try:
        tagged = DST + SRC + bytes.fromhex("8100a064") + b"\x88\xb5" + bytes(46)
        host.send(tagged)
        assert receive(port, 1) == [tagged]
        port.send(frame(60, 7))
        port.flush()
        assert recv_frames(host, 5.0, 1) == [frame(60, 7)]
        time.sleep(0.1)
        assert port.recv_batch() == []  # its own transmission is not received back
    finally:
        port.close()


@pytest.mark.parametrize("mode", ["rings", "c-rings"])
def test_frames_refused_on_a_down_interface_are_counted_and_never_sent(net, wire, mode):
    ns, host, sw_if = wire
    port = open_port(mode, sw_if)
    try:
        net.set_up(sw_if, False)
        for i in range(5):
            port.send(frame(60, i))  # queued in the ring, refused at the flush
        port.flush()
        assert (port.counters.tx_packets, port.counters.tx_errors) == (0, 5)
        assert port.counters.tx_bytes == 0
        net.set_up(sw_if, True)
        net.set_up("eth0", True, ns)
        time.sleep(0.2)
        drain(host)
        port.send(frame(60, 99))
        port.flush()
        assert recv_frames(host, 2.0) == [frame(60, 99)]  # nothing stale before it
    finally:
        port.close()


@pytest.mark.parametrize("burst", [1, 8])
@pytest.mark.parametrize("mode", MODES)
def test_frames_dropped_on_the_way_out_are_lost_alone_and_the_rest_go_out_in_order(wire, mode,
                                                                                   burst):
    """A tc filter drops 30% of what leaves the switch interface (the failover experiment's
    silent drop). The kernel refuses a dropped frame with ENOBUFS and, with a transmit ring,
    would offer the same frame again at the next send: each must be lost once, as with a send
    per frame, and the frames behind it still go out."""
    _, host, sw_if = wire
    run("tc", "qdisc", "add", "dev", sw_if, "clsact")
    run("tc", "filter", "add", "dev", sw_if, "egress", "bpf", "da", "bytecode",
        drop_program(0.3))
    port = open_port(mode, sw_if)
    try:
        count = 1000
        for i in range(count):
            port.send(frame(60, i))  # False at once without a ring; with one, at the flush
            if i % burst == burst - 1:
                port.flush()
        got = recv_frames(host, 1.0, count)
        seqs = [int.from_bytes(f[14:18], "big") for f in got]
        assert seqs == sorted(set(seqs)), "frames repeated or out of order"
        assert got == [frame(60, i) for i in seqs]
        c = port.counters
        assert (c.tx_packets, c.tx_errors) == (len(got), count - len(got))
        assert 0.24 < c.tx_errors / count < 0.36  # 30% of 1000: 4.1 standard deviations
    finally:
        port.close()
        run("tc", "qdisc", "del", "dev", sw_if, "clsact")


@pytest.mark.parametrize("count", [256, 1000])
@pytest.mark.parametrize("mode", MODES)
def test_a_full_qdisc_loses_what_it_cannot_take_and_the_rest_arrive_in_order(wire, mode, count):
    """The interface's queue (tbf, a few frames deep at 1 Mb/s) refuses most of a burst with
    ENOBUFS: every refused frame counts once, none is sent twice or late, and the queue counts
    every one the port lost. 1000 frames: more than the transmit ring's 256 slots, whose frames
    the kernel still holds (the receiver has not read them), so the ring itself fills; its
    frames then go to the kernel one by one rather than being dropped where the link's queue
    does not see it (a starved switch's burst once looked like a lossy link that way)."""
    _, host, sw_if = wire
    run("tc", "qdisc", "add", "dev", sw_if, "root", "tbf", "rate", "1mbit", "burst", "1600",
        "limit", "1600")
    port = open_port(mode, sw_if)
    try:
        for i in range(count):
            port.send(frame(60, i))
        port.flush()
        got = recv_frames(host, 2.0, count)
        seqs = [int.from_bytes(f[14:18], "big") for f in got]
        assert seqs == sorted(set(seqs)), "frames repeated or out of order"
        assert got == [frame(60, i) for i in seqs] and seqs[0] == 0
        c = port.counters
        assert (c.tx_packets, c.tx_errors) == (len(got), count - len(got))
        assert 0 < len(got) < count // 2  # the queue holds a few dozen 60-byte frames
        shown = subprocess.run(["tc", "-s", "-j", "qdisc", "show", "dev", sw_if], check=True,
                               capture_output=True, text=True).stdout
        (root,) = [q for q in json.loads(shown) if q.get("root")]
        assert root["drops"] == c.tx_errors
    finally:
        port.close()
        run("tc", "qdisc", "del", "dev", sw_if, "root")


def test_a_full_receive_ring_drops_in_the_kernel_and_counts_it(wire):
    _, host, sw_if = wire
    port = RawPort(1, sw_if, rx_ring=64)  # two blocks of 32 slots of 2 KiB
    try:
        sent = [frame(60, i) for i in range(200)]
        for f in sent:
            host.send(f)
        time.sleep(0.2)
        got = receive(port, 200, timeout=0.5)
        assert got == sent[:len(got)]  # the first ones, intact and in order
        assert 0 < len(got) < 200
        assert port.kernel_drops() == 200 - len(got)
    finally:
        port.close()


def test_a_link_going_down_wakes_the_port_once(net, wire):
    """The kernel reports a link going down as a socket error; with a ring no recvmsg clears
    it, so the port must, or an event loop polling the socket would spin."""
    _, _, sw_if = wire
    port = RawPort(1, sw_if)
    try:
        net.set_up(sw_if, False)
        readable, _, _ = select.select([port], [], [], 2.0)
        assert readable == [port]
        assert port.recv_batch() == []
        assert select.select([port], [], [], 0.2)[0] == []
    finally:
        port.close()


def test_reused_transmit_slots_do_not_change_frames_still_queued_at_the_receiver(wire):
    """1000 distinct frames through the 256-slot transmit ring while the host reads nothing:
    every frame it reads afterwards is the one sent, though its slot was written again."""
    _, host, sw_if = wire
    port = RawPort(1, sw_if)
    try:
        sent = [DST + SRC + b"\x88\xb5" + i.to_bytes(4, "big") * 25 for i in range(1000)]
        for i, f in enumerate(sent):
            assert port.send(f)
            if i % 50 == 49:
                port.flush()
        port.flush()
        assert recv_frames(host, 5.0, len(sent)) == sent
    finally:
        port.close()


def test_the_c_code_takes_a_port_over_where_python_left_it(wire):
    """Handing a port's rings to the C code mid-stream: what Python queued goes out first,
    and both rings go on from the slots Python reached, across their wrap-around."""
    _, host, sw_if = wire
    port = RawPort(1, sw_if)
    layout = port.ring_layout
    assert layout is not None
    rx_part, tx_part = layout.rx_slots * 3 // 4, layout.tx_slots * 3 // 4
    sent = [frame(60, i) for i in range(2 * rx_part)]  # past the receive ring's last slot
    for f in sent[:rx_part]:
        host.send(f)
    assert receive(port, rx_part) == sent[:rx_part]
    out = [frame(60, 10000 + i) for i in range(2 * tx_part)]  # past the transmit ring's
    for f in out[:tx_part]:
        port.send(f)  # queued, not flushed
    c_port = open_c(port)
    assert recv_frames(host, 5.0, tx_part) == out[:tx_part]
    for f in sent[rx_part:]:
        host.send(f)
    assert receive(c_port, rx_part) == sent[rx_part:]
    for f in out[tx_part:]:
        assert c_port.send(f)
    c_port.flush()
    assert recv_frames(host, 5.0, tx_part) == out[tx_part:]
    c_port.close()
