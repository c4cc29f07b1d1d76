"""Several switches in one p4switch process (`p4switch ARGS :: ARGS`): each its own P4Runtime
server, runtime CLI and ports, one loop for their data planes; a packet crosses them in order."""

import os
import subprocess
import sys
import time

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from sw_frames import eth, mac
from sw_netenv import drain, raw_socket, recv_frames
from sw_p4rt import PROGRAMS, Client, compile_program, load_p4info, update
from sw_proc import REPO, wait_port
from test_switch_process import cli

from p4switch.p4info.index import P4InfoIndex
from tests.ports import loose_port
from topos.mininet.procs import stop_child

pytestmark = pytest.mark.root


def switch_args(ports: dict[int, str], thrift: int, grpc: int) -> list[str]:
    interfaces = [a for number, name in ports.items() for a in ("-i", f"{number}@{name}")]
    return [*interfaces, "--thrift-port", str(thrift), "--no-p4", "--",
            "--grpc-server-addr", f"127.0.0.1:{grpc}"]


def start_group(*switches: list[str]) -> subprocess.Popen:
    argv = [sys.executable, "-m", "p4switch.cli.switch"]
    for i, args in enumerate(switches):
        argv += (["::"] if i else []) + args
    return subprocess.Popen(argv, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> int:
    """SIGTERM, SIGKILL after 5 s; the exit status."""
    return stop_child(proc, 5.0, group=False)


def forward_both_ways(client: Client, index: P4InfoIndex) -> None:
    for in_port, out_port in ((1, 2), (2, 1)):
        te = pb.TableEntry(table_id=index.id("tables", "TestIngress.fwd"))
        te.match.add(field_id=1).exact.value = bytes([in_port])
        te.action.action.action_id = index.id("actions", "TestIngress.forward")
        te.action.action.params.add(param_id=1, value=out_port.to_bytes(2, "big"))
        client.write(update("INSERT", table_entry=te))


def port_stats(thrift: int) -> dict[int, dict[str, int]]:
    """{port: counters} from the runtime CLI's `port_stats`."""
    res = cli(thrift, "port_stats")
    assert res.returncode == 0, res.stderr
    stats: dict[int, dict[str, int]] = {}
    for line in res.stdout.splitlines():  # port N (iface): name value name value ...
        head, _, rest = line.partition(": ")
        words = rest.split()
        stats[int(head.split()[1])] = dict(zip(words[::2], map(int, words[1::2]), strict=True))
    return stats


def test_two_switches_in_one_process_forward_through_each_other(net, tmp_path):
    """h1 - s1 - s2 - h2: s1 and s2 in one process, programmed over their own gRPC servers."""
    p4info_path, config_path = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    h1, h2 = net.host("h1"), net.host("h2")
    s1_host, s2_host = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    s1_out, s2_in = net.wire(1)
    ports = [(loose_port(), loose_port()) for _ in range(2)]
    proc = start_group(switch_args({1: s1_host, 2: s1_out}, *ports[0]),
                       switch_args({1: s2_in, 2: s2_host}, *ports[1]))
    clients: list[Client] = []
    socks = [raw_socket(h1, "eth0"), raw_socket(h2, "eth0")]
    try:
        for _, grpc_port in ports:
            wait_port(grpc_port, proc)
        p4info = load_p4info(p4info_path)
        index = P4InfoIndex(p4info)
        for _, grpc_port in ports:
            client = Client(f"127.0.0.1:{grpc_port}", election=1)
            clients.append(client)
            assert client.next("arbitration").status.code == code_pb2.OK
            client.set_pipeline(p4info, config_path.read_bytes())
        for sock in socks:
            drain(sock)
        # s1 alone programmed: nothing reaches h2, s2 drops (default action) what s1 sends it
        forward_both_ways(clients[0], index)
        frames = [eth(mac(2), mac(1), 0x0800, b"hop %d" % i) for i in range(40)]
        for frame in frames:
            socks[0].send(frame)
        assert recv_frames(socks[1], 0.5) == []
        forward_both_ways(clients[1], index)
        for frame in frames:
            socks[0].send(frame)
        assert recv_frames(socks[1], 5.0, count=len(frames)) == frames
        back = [eth(mac(1), mac(2), 0x0800, b"back %d" % i) for i in range(40)]
        for frame in back:
            socks[1].send(frame)
        assert recv_frames(socks[0], 5.0, count=len(back)) == back
        # each switch counts its own ports: s1 took 80 frames from h1 and sent 40 of them to s2
        s1, s2 = port_stats(ports[0][0]), port_stats(ports[1][0])
        assert (s1[1]["rx_packets"], s1[2]["tx_packets"]) == (80, 80)
        assert (s2[1]["rx_packets"], s2[2]["tx_packets"]) == (80, 40)
        assert (s2[2]["rx_packets"], s1[1]["tx_packets"]) == (40, 40)
        start = time.monotonic()
        assert stop(proc) == 0
        assert time.monotonic() - start < 1.0
    finally:
        for client in clients:
            client.close()
        for sock in socks:
            sock.close()
        stop(proc)


def test_a_switch_that_cannot_start_stops_the_group_and_is_named(net):
    h1 = net.host("h1")
    s1_if = net.link(h1, "eth0", 1)
    first = (loose_port(), loose_port())
    proc = start_group(switch_args({1: s1_if}, *first),
                       switch_args({1: "swnosuchif0"}, loose_port(), loose_port()))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "switch 2:" in err and "swnosuchif0" in err and "does not exist" in err
    # the first switch was closed with it: its ports and gRPC port are free again
    proc = start_group(switch_args({1: s1_if}, *first))
    try:
        wait_port(first[1], proc)
    finally:
        assert stop(proc) == 0
