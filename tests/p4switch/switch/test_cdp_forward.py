"""The C data plane's loop (p4switch/cdp/c/ports.c) as a port-to-port forwarder between two
host namespaces, on real veth pairs: every frame arrives whole and in order both ways, jumbo
frames included, SIGTERM stops it with its counters, bad arguments are refused. (The ring
code's own cases, 802.1Q tags among them, are test_switch_rings.py's mode "c-rings".)"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sw_netenv import drain, raw_socket, recv_frames, run

pytestmark = pytest.mark.root  # veth pairs and raw sockets

SRC, DST = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")
ROOT = Path(__file__).resolve().parents[3]
FORWARD = [sys.executable, "-m", "p4switch.cdp.forward"]


def frame(size: int, seq: int) -> bytes:
    return DST + SRC + b"\x88\xb5" + seq.to_bytes(4, "big") + bytes(size - 18)


def start(*args: str) -> subprocess.Popen:
    proc = subprocess.Popen([*FORWARD, *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != "ready":
        proc.wait(10)
        assert proc.stderr is not None
        err = proc.stderr.read()
        if "cannot be built" in err or "no C compiler" in err:
            pytest.skip(err)
        raise AssertionError(f"forwarder did not start: {line!r} {err}")
    return proc


def test_frames_cross_both_ways_whole_and_in_order(net):
    hosts = [net.host(f"h{i}") for i in (1, 2)]
    ports = [net.link(ns, "eth0", i + 1) for i, ns in enumerate(hosts)]
    for ns, sw_if in zip(hosts, ports, strict=True):
        run("ip", "link", "set", sw_if, "mtu", "9000")
        run("ip", "-n", ns, "link", "set", "eth0", "mtu", "9000")
    socks = [raw_socket(ns, "eth0") for ns in hosts]
    proc = start(f"1@{ports[0]}", f"2@{ports[1]}")
    try:
        sizes = [60, 1514, 9000, 64, 2100, 60] * 20  # 2100, 9000: larger than a ring slot
        there = [frame(size, i) for i, size in enumerate(sizes)]
        back = [frame(size, 1000 + i) for i, size in enumerate(sizes)]
        for f in there:
            socks[0].send(f)
        assert recv_frames(socks[1], 5.0, len(there)) == there
        for f in back:
            socks[1].send(f)
        assert recv_frames(socks[0], 5.0, len(back)) == back
        drain(socks[0])
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        for s in socks:
            s.close()
    assert proc.returncode == 0, err
    assert f"port 1: rx {len(there)} packets, tx {len(back)} packets, 0 tx errors" in out
    assert f"port 2: rx {len(back)} packets, tx {len(there)} packets, 0 tx errors" in out


@pytest.mark.parametrize("args, message", [
    (["veth0"], "expected PORT@INTERFACE"),
    (["1@a", "1@b"], "a port number is given twice"),
    (["1@a"], "give two ports, or --map"),
    (["1@a", "2@b", "--map", "1-2"], "expected IN:OUT"),
])
def test_bad_arguments_are_refused_with_the_reason(args, message):
    done = subprocess.run([*FORWARD, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and message in done.stderr


def test_a_missing_interface_is_named(net):
    done = subprocess.run([*FORWARD, "1@nosuchif0", "2@nosuchif1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "'nosuchif0' (port 1) does not exist" in done.stderr
