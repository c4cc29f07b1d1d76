"""Malformed frames, a crashed controller: the switch keeps running and forwarding."""

import os
import random
import signal
import subprocess
import sys
import time

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from sw_frames import PROBE_TYPE, eth, mac
from sw_netenv import drain, raw_socket, recv_frames
from sw_p4rt import PROGRAMS, Client, compile_program, load_p4info
from sw_proc import REPO, SwitchProcess

pytestmark = pytest.mark.root


def _forwards(s1, s2) -> bool:
    drain(s2)
    frame = eth(mac(2), mac(1), 0x0800, b"alive?")
    s1.send(frame)
    return frame in recv_frames(s2, 2.0, count=1, match=lambda f: f == frame)


def test_thousands_of_random_and_truncated_frames(net, tmp_path):
    _, config = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    h1, h2 = net.host("h1"), net.host("h2")
    p1, p2 = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    s1, s2 = raw_socket(h1, "eth0"), raw_socket(h2, "eth0")
    with SwitchProcess(["-i", f"1@{p1}", "-i", f"2@{p2}", str(config), "--",
                        "--cpu-port", "510"]) as sw:
        subprocess.run([sys.executable, "-m", "p4switch.cli.runtime_cli", "--thrift-port",
                        str(sw.thrift_port), "table_add", "TestIngress.fwd",
                        "TestIngress.forward", "1", "=>", "2"], cwd=REPO, check=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=30)
        assert _forwards(s1, s2)
        rng = random.Random(4791)
        sent = 0
        for i in range(4000):
            kind = i % 4
            if kind == 0:  # random bytes of random length
                frame = rng.randbytes(rng.randint(14, 1514))
            elif kind == 1:  # a probe header cut short
                frame = eth(mac(2), mac(1), PROBE_TYPE, b"")[:14 + rng.randint(0, 15)]
            elif kind == 2:  # valid Ethernet, random ether type and body
                frame = eth(mac(2), mac(rng.randint(0, 99)), rng.randint(0, 0xFFFF),
                            rng.randbytes(rng.randint(0, 200)))
            else:  # a frame that looks like a packet_out header on a data port
                frame = rng.randbytes(2) + eth(mac(2), mac(1), 0x0800, b"x")
            try:
                s1.send(frame)
                sent += 1
            except OSError:
                pass  # the kernel refused it; not the switch's business
            if i % 200 == 0:
                time.sleep(0.002)  # let the switch drain the socket now and then
        assert sent > 3900
        deadline = time.monotonic() + 10
        while not _forwards(s1, s2):
            assert time.monotonic() < deadline, "the switch stopped forwarding"
        assert sw.alive()
        assert "Traceback" not in sw.stderr()
        s1.close()
        s2.close()


def test_a_killed_controller_does_not_take_the_switch_down(tmp_path):
    p4info, config = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    with SwitchProcess(["--no-p4"]) as sw:
        script = (
            "import sys, time\n"
            f"sys.path[:0] = [{str(REPO)!r}, {os.path.dirname(__file__)!r}]\n"
            "from pathlib import Path\n"
            "from sw_p4rt import Client, load_p4info\n"
            f"c = Client({sw.addr!r}, election=5)\n"
            "c.next('arbitration')\n"
            f"c.set_pipeline(load_p4info(Path({str(p4info)!r})), "
            f"Path({str(config)!r}).read_bytes())\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert sw.alive()
        # its stream is gone: a new controller with a lower election id becomes primary
        c = Client(sw.addr, election=1)
        assert c.next("arbitration").status.code == code_pb2.OK
        # the pipeline it pushed is still there (no entries yet), and writes are accepted
        assert c.read(pb.Entity(table_entry=pb.TableEntry())) == []
        entry = pb.TableEntry(table_id=load_p4info(p4info).tables[0].preamble.id)
        assert c.read(pb.Entity(table_entry=entry)) == []
        c.close()
        assert sw.alive()
