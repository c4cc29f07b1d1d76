"""Patched links on real interfaces: every frame crosses unchanged in both directions (a PFC
pause frame too), between two root-namespace ports (handed into the far port's receive path) and
between a root port and a namespace's (out of the other patch interface); the patch interface a
frame arrives on counts it, which is what the link probes read; setting the patch down takes
the carrier from both ends and stops the frames."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.linkwatch import interface_rx_packets, veth_peers
from topos.mininet.patch import make_patched_pair, patch_names, set_patch

pytestmark = pytest.mark.root
ETH_P_ALL = 0x0003
FRAMES = 20
SRC = bytes.fromhex("02aabbccdd01")


def frame(dst: bytes, seq: int, ethertype: int = 0x88B5) -> bytes:
    return dst + SRC + ethertype.to_bytes(2, "big") \
        + seq.to_bytes(4, "big") + bytes(60)


def pause_frame() -> bytes:
    """802.3x PAUSE (01:80:c2:00:00:01, MAC control opcode 1, 0xffff quanta): a bridge would
    swallow it, the patch must not."""
    return bytes.fromhex("0180c2000001") + SRC + b"\x88\x08" \
        + b"\x00\x01\xff\xff" + bytes(42)


def listener(intf: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((intf, 0))
    sock.settimeout(2)
    return sock


def sender(intf: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((intf, 0))
    return sock


def received(sock: socket.socket, count: int) -> list[bytes]:
    """Up to `count` of the test's frames (source SRC) that `sock` receives, until 2 s of quiet;
    its own sends and the kernel's (IPv6 neighbour discovery) are skipped."""
    got: list[bytes] = []
    try:
        while len(got) < count:
            data, addr = sock.recvfrom(4096)
            if addr[2] != socket.PACKET_OUTGOING and data[6:12] == SRC:
                got.append(data)
    except TimeoutError:
        pass
    return got


def delete(*intfs: str) -> None:
    for intf in intfs:
        subprocess.run(["ip", "link", "del", intf], capture_output=True, check=False)


@pytest.fixture
def root_pair() -> Iterator[tuple[str, str]]:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    pair = ("tpat1-eth1", "tpat2-eth1")
    delete(*pair)
    make_patched_pair(*pair, None, None)
    try:
        for intf in (*pair, *patch_names(pair[0])):
            assert Path(f"/sys/class/net/{intf}").exists(), intf
        subprocess.run(["ip", "-batch", "-"], input="".join(f"link set dev {i} up\n" for i in pair),
                       text=True, check=True)
        yield pair
    finally:
        delete(*pair)


def test_root_ports_exchange_frames_unchanged_counted_on_the_patch(root_pair) -> None:
    a, b = root_pair
    pa, pb = patch_names(a)
    assert veth_peers()[a] == pa and veth_peers()[b] == pb
    for src, dst, arrives_on in ((a, b, pa), (b, a, pb)):
        sent = [frame(bytes.fromhex("02000000ff01"), i) for i in range(FRAMES)] + [pause_frame()]
        counted = interface_rx_packets(arrives_on)
        dst_counted = interface_rx_packets(dst)
        with listener(dst) as rx, sender(src) as tx:
            for data in sent:
                tx.send(data)
            got = received(rx, len(sent))
        assert got == sent, (src, dst)
        assert interface_rx_packets(arrives_on) - counted >= len(sent)
        assert interface_rx_packets(dst) == dst_counted  # handed in, not received by its veth


def test_a_downed_patch_takes_the_carrier_from_both_ends_and_stops_frames(root_pair) -> None:
    a, b = root_pair
    set_patch(a, False)
    try:
        for intf in (a, b):
            assert Path(f"/sys/class/net/{intf}/carrier").read_text().strip() == "0", intf
        with listener(b) as rx, sender(a) as tx:
            with contextlib.suppress(OSError):  # no carrier: the kernel may refuse at once
                tx.send(frame(bytes.fromhex("02000000ff01"), 1))
            assert received(rx, 1) == []
    finally:
        set_patch(a, True)
    with listener(b) as rx, sender(a) as tx:
        tx.send(frame(bytes.fromhex("02000000ff01"), 2))
        assert len(received(rx, 1)) == 1


def test_a_port_in_a_namespace_exchanges_frames_through_the_patch() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    root_end, ns_end = "tpat3-eth1", "tpat4-eth0"
    patches = patch_names(root_end)
    delete(root_end, *patches)
    # a process in a namespace of its own, ready once it echoes a line (unshare ran by then)
    ns = subprocess.Popen(["unshare", "-n", "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    try:
        assert ns.stdin is not None and ns.stdout is not None
        ns.stdin.write("ready\n")
        ns.stdin.flush()
        assert ns.stdout.readline() == "ready\n"
        make_patched_pair(root_end, ns_end, None, None, None, ns.pid)
        in_ns = ["nsenter", "-t", str(ns.pid), "-n"]
        subprocess.run([*in_ns, "ip", "link", "set", ns_end, "up"], check=True)
        subprocess.run(["ip", "link", "set", root_end, "up"], check=True)
        # into the namespace: the namespace's port receives them (its own statistics count them)
        catch = ("import socket,sys\n"
                 f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW,socket.htons({ETH_P_ALL}))\n"
                 f"s.bind(('{ns_end}',0)); s.settimeout(3); n=0\n"
                 "print('ready',flush=True)\n"
                 "try:\n"
                 f"    while n < {FRAMES}:\n"
                 f"        d=s.recv(4096); n+=d[6:12]==bytes.fromhex('{SRC.hex()}')\n"
                 "except TimeoutError: pass\n"
                 "print(n)\n")
        rx = subprocess.Popen([*in_ns, "python3", "-c", catch], stdout=subprocess.PIPE, text=True)
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        with sender(root_end) as tx:
            for i in range(FRAMES):
                tx.send(frame(bytes.fromhex("02000000ff02"), i))
        out, _ = rx.communicate(timeout=10)
        assert out.strip() == str(FRAMES)
        # out of the namespace: handed into the root port's receive path
        send = ("import socket\n"
                f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW); s.bind(('{ns_end}',0))\n"
                f"[s.send(bytes.fromhex('{frame(bytes.fromhex('02000000ff03'), 7).hex()}'))"
                f" for _ in range({FRAMES})]\n")
        with listener(root_end) as sock:
            subprocess.run([*in_ns, "python3", "-c", send], check=True)
            got = received(sock, FRAMES)
        assert len(got) == FRAMES and got[0][:14] == frame(bytes.fromhex("02000000ff03"), 7)[:14]
    finally:
        delete(root_end, *patches)  # the namespace's end goes with its patch interface
        ns.kill()
        ns.wait()
