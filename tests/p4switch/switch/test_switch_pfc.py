"""PFC frames received on a port pause that port's egress queues (p4switch-only)."""

import os
import struct
import subprocess
import sys

import pytest
from sw_frames import is_probe, mac, probe
from sw_netenv import drain, raw_socket, recv_frames
from sw_p4rt import PROGRAMS, compile_program
from sw_proc import REPO, SwitchProcess

from p4switch.switch.pfc import PfcReceiver, parse_pfc


def pfc_frame(quanta: dict[int, int]) -> bytes:
    enabled = sum(1 << c for c in quanta)
    times = [quanta.get(c, 0) for c in range(8)]
    frame = bytes.fromhex("0180c2000001") + mac(9) + struct.pack("!HHH8H", 0x8808, 0x0101,
                                                                 enabled, *times)
    return frame + bytes(60 - len(frame))


def test_parse_and_apply_quanta():
    assert parse_pfc(pfc_frame({3: 100, 6: 0})) == [(3, 100), (6, 0)]
    assert parse_pfc(mac(1) + mac(2) + b"\x88\x08\x00\x01" + bytes(50)) is None  # PAUSE
    calls = []
    rx = PfcReceiver(lambda *a: calls.append(a) or True, priority_queues=4,
                     link_bps=lambda p: 1e9)
    assert rx.handle(5, pfc_frame({1: 0xFFFF, 7: 10})) is True
    assert calls == [(5, 1, pytest.approx(0xFFFF * 512 / 1e9))]  # class 7 >= 4 queues
    assert rx.handle(5, mac(1) + mac(2) + b"\x08\x00" + bytes(46)) is None


@pytest.mark.root
@pytest.mark.parametrize("pipeline", ["python", "c"])
def test_pause_and_resume_through_the_wire(net, tmp_path, pipeline):
    _, config = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    h1, h2 = net.host("h1"), net.host("h2")
    p1, p2 = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    s1, s2 = raw_socket(h1, "eth0"), raw_socket(h2, "eth0")
    with SwitchProcess(["-i", f"1@{p1}", "-i", f"2@{p2}", "--pfc-link-mbps", "1",
                        "--pipeline", pipeline, str(config)]) as sw:
        subprocess.run([sys.executable, "-m", "p4switch.cli.runtime_cli", "--thrift-port",
                        str(sw.thrift_port), "table_add", "TestIngress.fwd",
                        "TestIngress.forward", "1", "=>", "2"], cwd=REPO, check=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=30)
        s2.send(pfc_frame({0: 0xFFFF}))  # h2 pauses priority 0 towards it: 33 s at 1 Mb/s
        drain(s2)
        for seq in range(5):
            s1.send(probe(mac(2), mac(1), seq))
        assert [f for f in recv_frames(s2, 0.5) if is_probe(f)] == []
        s2.send(pfc_frame({0: 0}))  # XON
        got = [f for f in recv_frames(s2, 2.0, count=5) if is_probe(f)]
        assert len(got) == 5
    s1.close()
    s2.close()
