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


def _random_update(rng: random.Random, p4info) -> pb.Update:
    """A plausible but mostly wrong Update: real or bogus ids, random byte strings."""
    def blob() -> bytes:
        return rng.randbytes(rng.choice([0, 1, 1, 2, 2, 3, 6, 7]))

    def ident(items) -> int:
        return rng.choice([o.preamble.id for o in items] + [0, rng.randrange(1 << 32)])

    u = pb.Update(type=rng.randrange(5))
    kind = rng.randrange(6)
    if kind <= 1:
        te = u.entity.table_entry
        te.table_id = ident(p4info.tables)
        te.priority = rng.choice([0, 0, 1, 5, -1])
        te.is_default_action = rng.random() < 0.1
        for _ in range(rng.randrange(4)):
            fm = te.match.add(field_id=rng.randrange(4))
            which = rng.randrange(5)
            if which == 0:
                fm.exact.value = blob()
            elif which == 1:
                fm.lpm.value, fm.lpm.prefix_len = blob(), rng.randrange(-1, 70)
            elif which == 2:
                fm.ternary.value, fm.ternary.mask = blob(), blob()
            elif which == 3:
                fm.range.low, fm.range.high = blob(), blob()
            else:
                fm.optional.value = blob()
        which = rng.randrange(4)
        if which == 0:
            a = te.action.action
            a.action_id = ident(p4info.actions)
            for _ in range(rng.randrange(3)):
                a.params.add(param_id=rng.randrange(4), value=blob())
        elif which == 1:
            te.action.action_profile_member_id = rng.randrange(4)
        elif which == 2:
            te.action.action_profile_group_id = rng.randrange(4)
    elif kind == 2:
        m = u.entity.action_profile_member
        m.action_profile_id, m.member_id = ident(p4info.action_profiles), rng.randrange(4)
        m.action.action_id = ident(p4info.actions)
        m.action.params.add(param_id=1, value=blob())
    elif kind == 3:
        g = u.entity.action_profile_group
        g.action_profile_id, g.group_id = ident(p4info.action_profiles), rng.randrange(4)
        g.max_size = rng.randrange(-1, 12)
        for _ in range(rng.randrange(4)):
            g.members.add(member_id=rng.randrange(4), weight=rng.randrange(-1, 4),
                          watch_port=blob())
    elif kind == 4:
        c = u.entity.counter_entry
        c.counter_id = ident(p4info.counters)
        c.index.index = rng.randrange(-2, 600)
        c.data.packet_count = rng.randrange(1 << 20)
    else:
        mc = u.entity.packet_replication_engine_entry.multicast_group_entry
        mc.multicast_group_id = rng.randrange(-1, 3) & 0xFFFFFFFF
        for _ in range(rng.randrange(3)):
            mc.replicas.add(egress_port=rng.randrange(600), instance=rng.randrange(3))
    return u


def test_thousands_of_bad_p4runtime_updates(net, tmp_path):
    p4info_path, config = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    p4info = load_p4info(p4info_path)
    h1, h2 = net.host("h1"), net.host("h2")
    p1, p2 = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    s1, s2 = raw_socket(h1, "eth0"), raw_socket(h2, "eth0")
    known = {"OK", "INVALID_ARGUMENT", "ALREADY_EXISTS", "NOT_FOUND", "PERMISSION_DENIED",
             "RESOURCE_EXHAUSTED", "UNIMPLEMENTED", "OUT_OF_RANGE", "FAILED_PRECONDITION"}
    with SwitchProcess(["-i", f"1@{p1}", "-i", f"2@{p2}", "--no-p4"]) as sw:
        c = Client(sw.addr, election=1)
        c.next("arbitration")
        c.set_pipeline(p4info, config.read_bytes())
        fwd = pb.TableEntry(table_id=next(t.preamble.id for t in p4info.tables
                                          if t.preamble.name == "TestIngress.fwd"))
        fwd.match.add(field_id=1).exact.value = b"\x01"
        fwd.action.action.action_id = next(a.preamble.id for a in p4info.actions
                                           if a.preamble.name == "TestIngress.forward")
        fwd.action.action.params.add(param_id=1, value=b"\x02")
        c.write(pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=fwd)))
        rng = random.Random(9559)
        codes: dict[str, int] = {}
        for _ in range(100):
            updates = [_random_update(rng, p4info) for _ in range(20)]
            results = c.write_errors(*updates)
            assert len(results) == len(updates)
            for code, message in results:
                codes[code] = codes.get(code, 0) + 1
                assert code in known, (code, message)
                assert "internal error" not in message, message
            c.read(pb.Entity(table_entry=pb.TableEntry()))
        assert codes.get("INVALID_ARGUMENT", 0) > 100 and len(codes) >= 4, codes
        # the random updates may have hit the forwarding entry: put it back, then forward
        for kind in ("INSERT", "MODIFY"):
            c.write_errors(pb.Update(type=pb.Update.Type.Value(kind),
                                     entity=pb.Entity(table_entry=fwd)))
        assert sw.alive() and _forwards(s1, s2)
        assert "Traceback" not in sw.stderr()
        c.close()
    s1.close()
    s2.close()
