"""The socket filters, on real sockets: which frames a sender's control socket and a receiver's
data socket wake up for."""

from __future__ import annotations

import json
import subprocess

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

from traffic.frames import Endpoints, add_tag, build_frame
from traffic.hosts import python_argv
from traffic.pfc import build_pause

pytestmark = pytest.mark.root

LISTENER = """
import json, sys
from traffic import bpf, netutil
iface, which, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = netutil.packet_socket(iface, netutil.ETH_P_ALL)
bpf.attach(s, getattr(bpf, which)())
netutil.drain(s)
s.setblocking(True)
print("ready", flush=True)
print(json.dumps([s.recv(4096).hex() for _ in range(count)]), flush=True)
"""


def _listen(host, which: str, count: int) -> subprocess.Popen:
    proc = host.popen([python_argv("traffic")[0], "-c", LISTENER, host.iface, which, str(count)],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def _send_from(host, frames: list[bytes]) -> None:
    code = ("import socket,sys\ns=socket.socket(socket.AF_PACKET,socket.SOCK_RAW,0)\n"
            "s.bind((sys.argv[1],0))\n[s.send(bytes.fromhex(h)) for h in sys.argv[2:]]")
    host.run([python_argv("traffic")[0], "-c", code, host.iface, *[f.hex() for f in frames]])


def _frames(a, b):
    to_a = Endpoints(b.mac, a.mac, b.ip, a.ip, 50000, 77)  # from b's side towards a
    other_udp = bytes(Ether(src=b.mac, dst=a.mac) / IP(src=b.ip, dst=a.ip) / UDP(dport=53)
                      / (b"x" * 20))
    arp = bytes(Ether(src=b.mac, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=b.ip, pdst=a.ip))
    return {
        "cnp": build_frame(to_a, 0x81, becn=True),
        "tagged_cnp": add_tag(build_frame(to_a, 0x81, becn=True), 1, 0, flags=0x02),
        "ack": build_frame(to_a, 0x11, 3),
        "pfc": build_pause(b.mac, {3: 100}),
        "data": build_frame(to_a, 0x0A, 1, bytes(64), dlen=64),
        "tagged_data": add_tag(build_frame(to_a, 0x0A, 2, bytes(64), dlen=64), 1, 2),
        "other_udp": other_udp,
        "arp": arp,
        # flooded by a bridge to a host it is not for
        "other_host": build_frame(Endpoints(b.mac, "02:00:00:00:00:99", b.ip, "10.77.0.9", 50000,
                                            77), 0x0A, 1, bytes(64), dlen=64),
    }


@pytest.mark.parametrize(("which", "accepted"), [
    ("sender_control_filter", ["cnp", "tagged_cnp", "ack", "pfc"]),
    ("roce_receiver_filter", ["cnp", "tagged_cnp", "ack", "data", "tagged_data"]),
    ("incoming_filter", ["cnp", "tagged_cnp", "ack", "pfc", "data", "tagged_data", "other_udp",
                         "arp", "other_host"]),
])
def test_filters_pass_exactly_their_frames(pair_net, which, accepted):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    frames = _frames(a, b)
    marker = frames["cnp"]  # accepted by every filter: the end of the sequence
    # a's kernel answers some frames (ICMP unreachable): a static neighbour keeps it from
    # sending ARP requests whose replies would be extra incoming frames.
    a.run(["ip", "neigh", "replace", b.ip, "lladdr", b.mac, "dev", a.iface, "nud", "permanent"])
    proc = _listen(a, which, len(accepted) + 1)
    try:
        _send_from(a, list(frames.values()))  # outgoing on a's own interface: never passed
        _send_from(b, [*frames.values(), marker])
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    got = [bytes.fromhex(h) for h in json.loads(out)]
    names = {f: n for n, f in frames.items()}
    assert [names.get(g, g.hex()) for g in got] == [*accepted, "cnp"], err
