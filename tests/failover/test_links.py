"""Link names, link failure and the silent-drop filter on real veth pairs (prefix `fo`)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time

import pytest

from topos.mininet import failures as links
from topos.model import Endpoint, FabricSpec, Link, Switch

pytestmark = pytest.mark.root
SO_RCVBUFFORCE = 33
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


def two_switches(a: str = "fols1", b: str = "fols2") -> FabricSpec:
    return FabricSpec("fo-links", "test", switches=[Switch(a, "leaf", 1), Switch(b, "spine", 2)],
                      links=[Link(Endpoint(a, 1, f"{a}-eth1"), Endpoint(b, 1, f"{b}-eth1"))])


def test_links_are_found_by_node_pair_or_interface():
    spec = two_switches()
    link = spec.links[0]
    assert links.find_link(spec, "fols1", "fols2") is link
    assert links.find_link(spec, "fols2", "fols1") is link
    assert links.find_link(spec, "fols1~fols2") is link
    assert links.find_link(spec, "fols2-eth1") is link
    assert links.link_name(link) == "fols1~fols2"


def test_bad_link_names_say_what_is_wrong():
    spec = two_switches()
    with pytest.raises(links.LinkError, match="no node named 'nope'"):
        links.find_link(spec, "fols1", "nope")
    with pytest.raises(links.LinkError, match="no link for interface 'x-eth9'"):
        links.find_link(spec, "x-eth9")
    with pytest.raises(links.LinkError, match="two nodes or by one interface"):
        links.find_link(spec, "a", "b", "c")
    with pytest.raises(links.LinkError, match="within 0..1"):
        links.drop_program(1.5)


@pytest.fixture
def veth():
    spec = two_switches()
    subprocess.run(["ip", "link", "add", "fols1-eth1", "type", "veth", "peer", "name",
                    "fols2-eth1"], check=True)
    try:
        for intf in ("fols1-eth1", "fols2-eth1"):
            subprocess.run(["ip", "link", "set", intf, "up"], check=True)
        yield spec
    finally:
        subprocess.run(["ip", "link", "del", "fols1-eth1"], check=False)


def _operstate(intf: str) -> str:
    with open(f"/sys/class/net/{intf}/operstate") as f:
        return f.read().strip()


def _count_received(frames: int) -> int:
    """Send `frames` on fols1-eth1 (paced) and count what arrives on fols2-eth1."""
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    rx.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)  # every frame is kept
    rx.bind(("fols2-eth1", 0))
    rx.settimeout(0.5)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind(("fols1-eth1", 0))
    frame = b"\xff" * 6 + b"\x02" * 6 + b"\x88\xb5" + bytes(50)
    for _ in range(frames):
        with contextlib.suppress(OSError):  # the filter's drop reaches the sender as ENOBUFS
            tx.send(frame)
        time.sleep(0.0002)  # below the receiver's pace
    received = 0
    try:
        while True:
            rx.recv(100)
            received += 1
    except TimeoutError:
        pass
    tx.close()
    rx.close()
    return received


@needs_root
def test_failing_a_link_takes_the_far_end_down_and_restoring_brings_it_back(veth):
    link = veth.links[0]
    links.set_link(veth, link, False)
    deadline = time.monotonic() + 2
    while _operstate("fols2-eth1") == "up" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _operstate("fols2-eth1") != "up"
    links.set_link(veth, link, True)
    deadline = time.monotonic() + 2
    while _operstate("fols2-eth1") != "up" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _operstate("fols2-eth1") == "up"
    assert [s for _, _, s in links.link_states(veth)] == ["up/up"]


@needs_root
def test_a_silent_drop_discards_the_fraction_asked_for_and_keeps_the_link_up(veth):
    link = veth.links[0]
    assert _count_received(500) == 500
    links.set_silent_drop(veth, link, 0.3)
    try:
        received = _count_received(2000)
        assert _operstate("fols2-eth1") == "up"
    finally:
        links.set_silent_drop(veth, link, 0.0)
    assert 0.64 * 2000 < received < 0.76 * 2000  # 70% pass; 6 sigma is about +-0.06
    assert _count_received(500) == 500  # removed
