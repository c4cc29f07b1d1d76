"""The p4switch process without a program: readiness, P4Runtime basics, ports, shutdown."""

import os
import struct
import subprocess
import sys
import threading
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from sw_frames import eth, mac, probe
from sw_netenv import raw_socket
from sw_p4rt import PROGRAMS, Client, compile_program
from sw_proc import REPO, SwitchProcess

from tests.ports import loose_port

pytestmark = pytest.mark.root


def cli(port: int, *command: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "p4switch.cli.runtime_cli", "--thrift-port",
                           str(port), *command], input=stdin, cwd=REPO, capture_output=True,
                          text=True, timeout=30, env=dict(os.environ, PYTHONPATH=str(REPO)))


def test_no_p4_switch_serves_and_stops_cleanly(net):
    h1 = net.host("h1")
    sw_if = net.link(h1, "eth0", 1)
    with SwitchProcess(["-i", f"1@{sw_if}", "--no-p4", "--device-id", "3"]) as sw:
        with grpc.insecure_channel(sw.addr) as channel:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            caps = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
            assert caps.p4runtime_api_version == "1.3.0"
            with pytest.raises(grpc.RpcError) as err:  # no election id: not the primary's
                stub.Write(p4runtime_pb2.WriteRequest(device_id=3))
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
            with pytest.raises(grpc.RpcError) as err:
                list(stub.Read(p4runtime_pb2.ReadRequest(device_id=3)))
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            with pytest.raises(grpc.RpcError) as err:
                stub.GetForwardingPipelineConfig(
                    p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=3))
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            with pytest.raises(grpc.RpcError) as err:
                stub.SetForwardingPipelineConfig(
                    p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=3))
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        start = time.monotonic()
        assert sw.stop() == 0
        assert time.monotonic() - start < 1.0


def test_sigterm_with_controllers_connected_stops_within_a_second():
    sw = SwitchProcess(["--no-p4"])
    clients = [Client(sw.addr, election=e) for e in (1, 2)]
    assert clients[1].next("arbitration").status.code == code_pb2.OK
    start = time.monotonic()
    assert sw.stop() == 0
    assert time.monotonic() - start < 1.0
    for c in clients:
        with pytest.raises(EOFError):  # their streams were ended by the switch
            while True:
                c.next("arbitration", timeout=2)
        c.close()


def test_sigterm_while_loading_a_program_stops_within_a_second(tmp_path):
    log = tmp_path / "switch.log"
    argv = [sys.executable, "-m", "p4switch.cli.switch", "--log-file", str(log), "--thrift-port",
            str(loose_port()), str(REPO / "p4src" / "ecmp.p4"), "--", "--grpc-server-addr",
            f"127.0.0.1:{loose_port()}"]
    proc = subprocess.Popen(argv, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        deadline = time.monotonic() + 30
        while not (log.exists() and "loading" in log.read_text()):  # compiling from now on
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.005)
        start = time.monotonic()
        proc.send_signal(15)
        assert proc.wait(5) == 0
        assert time.monotonic() - start < 1.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigint_also_stops_within_a_second():
    sw = SwitchProcess(["--no-p4"])
    start = time.monotonic()
    sw.proc.send_signal(2)
    assert sw.proc.wait(5) == 0
    assert time.monotonic() - start < 1.0


def test_missing_interface_is_a_clear_startup_error():
    res = subprocess.run([sys.executable, "-m", "p4switch.cli.switch", "-i", "1@swnosuchif0",
                          "--no-p4", "--thrift-port", str(loose_port()), "--",
                          "--grpc-server-addr", f"127.0.0.1:{loose_port()}"],
                         cwd=REPO, capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert "swnosuchif0" in res.stderr and "does not exist" in res.stderr


def test_port_status_follows_the_link_and_is_logged(net):
    h1, h2 = net.host("h1"), net.host("h2")
    p1, p2 = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    with SwitchProcess(["-i", f"1@{p1}", "-i", f"2@{p2}", "--no-p4", "--log-console"]) as sw:
        res = cli(sw.thrift_port, "show_ports")
        assert res.returncode == 0, res.stderr
        rows = [line.split() for line in res.stdout.splitlines()[2:]]
        assert rows == [["1", p1, "UP"], ["2", p2, "UP"]]
        net.set_up("eth0", False, ns=h2)  # the peer going down takes the carrier away
        deadline = time.monotonic() + 10  # a wait for the switch, not a speed bound
        while "DOWN" not in cli(sw.thrift_port, "port_status", "2").stdout:
            assert time.monotonic() < deadline, "port 2 not reported down"
            time.sleep(0.02)
        net.set_up("eth0", True, ns=h2)
        deadline = time.monotonic() + 10  # a wait for the switch, not a speed bound
        while "UP" not in cli(sw.thrift_port, "port_status", "2").stdout:
            assert time.monotonic() < deadline, "port 2 not reported up again"
            time.sleep(0.02)
        sw.stop()
        log = sw.stderr()
        assert f"port 2 ({p2}) is DOWN" in log and f"port 2 ({p2}) is UP" in log


def test_runtime_cli_reports_errors_and_reads_stdin(net):
    with SwitchProcess(["--no-p4"]) as sw:
        res = cli(sw.thrift_port, stdin="set_queue_depth 10\nset_queue_rate 100 1 0\n"
                  "# a comment\nqueue_stats 1 0\n")
        assert res.returncode == 0, res.stderr
        assert "depth 0" in res.stdout
        res = cli(sw.thrift_port, "set_queue_depth", "ten")
        assert res.returncode == 1 and "depth must be an integer" in res.stderr
        res = cli(sw.thrift_port, "table_dump", "x")
        assert res.returncode == 1 and "no P4 program is loaded" in res.stderr
        res = cli(sw.thrift_port, "set_queue_rate", "100", "1", "3")
        assert res.returncode == 1 and "priority 3 out of range" in res.stderr


def test_many_concurrent_clients_do_not_disturb_the_switch():
    with SwitchProcess(["--no-p4"]) as sw:
        errors = []

        def client():
            try:
                with grpc.insecure_channel(sw.addr) as ch:
                    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
                    for _ in range(20):
                        stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
            except Exception as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and sw.alive()


def read_pcap(path) -> list[bytes]:
    data = path.read_bytes()
    assert struct.unpack("<IHH", data[:8]) == (0xA1B2C3D4, 2, 4)
    records, off = [], 24
    while off < len(data):
        _, _, caplen, _ = struct.unpack("<IIII", data[off:off + 16])
        records.append(data[off + 16:off + 16 + caplen])
        off += 16 + caplen
    return records


def test_pcap_records_each_ports_input(net, tmp_path):
    h1 = net.host("h1")
    p1 = net.link(h1, "eth0", 1)
    s1 = raw_socket(h1, "eth0")
    with SwitchProcess(["-i", f"1@{p1}", "--pcap", str(tmp_path), "--no-p4"]) as sw:
        frames = [eth(mac(2), mac(1), 0x0800, bytes([i]) * 40) for i in range(3)]
        for f in frames:
            s1.send(f)
        pcap_in = tmp_path / f"{p1}_in.pcap"
        deadline = time.monotonic() + 10  # a wait, not a speed bound: the machine may be busy
        while pcap_in.stat().st_size < 24 + 3 * (16 + 60) and time.monotonic() < deadline:
            time.sleep(0.01)
        stats = cli(sw.thrift_port, "port_stats", "1").stdout
        assert "rx_packets 3 rx_bytes 180 tx_packets 0" in stats and "rx_dropped 0" in stats
        sw.stop()
    records = read_pcap(pcap_in)
    assert [r for r in records if r in frames] == frames
    assert (tmp_path / f"{p1}_out.pcap").stat().st_size == 24  # nothing sent: header only
    s1.close()


def test_trace_level_logs_every_packet(net):
    h1 = net.host("h1")
    p1 = net.link(h1, "eth0", 1)
    s1 = raw_socket(h1, "eth0")
    with SwitchProcess(["-i", f"1@{p1}", "--no-p4", "--log-console", "-L", "trace"]) as sw:
        frame = eth(mac(2), mac(1), 0x0800, b"trace me")
        s1.send(frame)
        deadline = time.monotonic() + 10  # a wait for the switch, not a speed bound
        while f"port 1: received 60 bytes: {frame[:32].hex()}" not in sw.stderr():
            assert time.monotonic() < deadline, sw.stderr()
            time.sleep(0.02)
    s1.close()


def test_vlan_tags_reach_the_pipeline(net, tmp_path):
    """The kernel moves 802.1Q tags out of received frames; the port puts them back."""
    _, config = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    h1, h2 = net.host("h1"), net.host("h2")
    p1, p2 = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    s1 = raw_socket(h1, "eth0")
    with SwitchProcess(["-i", f"1@{p1}", "-i", f"2@{p2}", "--pcap", str(tmp_path),
                        str(config)]) as sw:
        assert cli(sw.thrift_port, "table_add", "TestIngress.fwd", "TestIngress.forward", "1",
                   "=>", "2").returncode == 0
        tagged = mac(2) + mac(1) + bytes.fromhex("8100a064") + b"\x08\x00" + bytes(46)
        s1.send(tagged)
        out = tmp_path / f"{p2}_out.pcap"
        deadline = time.monotonic() + 10  # a wait for the switch, not a speed bound
        while out.stat().st_size < 24 + 16 + len(tagged) and time.monotonic() < deadline:
            time.sleep(0.01)
        sw.stop()
    assert tagged in read_pcap(tmp_path / f"{p1}_in.pcap")
    assert tagged in read_pcap(out)  # forwarded with its tag (PCP 5, VLAN 100)
    s1.close()


def test_log_msg_output_is_logged_at_info(net, tmp_path):
    _, config = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    h1, h2 = net.host("h1"), net.host("h2")
    p1, p2 = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    s1 = raw_socket(h1, "eth0")
    with SwitchProcess(["-i", f"1@{p1}", "-i", f"2@{p2}", "--log-console", str(config)]) as sw:
        assert cli(sw.thrift_port, "table_add", "TestIngress.fwd", "TestIngress.forward", "1",
                   "=>", "2").returncode == 0
        s1.send(probe(mac(2), mac(1), 7))
        deadline = time.monotonic() + 10  # a wait for the switch, not a speed bound
        while "probe 7 leaves on port 2" not in sw.stderr():
            assert time.monotonic() < deadline, sw.stderr()
            time.sleep(0.02)
        assert "received 60 bytes" not in sw.stderr()  # per-packet lines only at -L trace
    s1.close()
