#!/usr/bin/env python3
"""Benchmark: packets per second forwarded by one p4switch running p4src/ecmp.p4.

Two host namespaces, each linked by a veth pair to a switch port; the switch routes
10.0.2.0/24 from port 1 to port 2 through the ECMP selector. A paced sender in h1 (1 ms
batches) sends
UDP frames of 64 B and 1000 B at increasing rates for five seconds each; a receiver in h2 counts
them. Reports per size the highest rate forwarded without loss, and the start-up time of the
switch (process start to gRPC port accepting connections), with and without a program.

    sudo .venv/bin/python bench/switch_pps.py [--rates 5000,10000,...] [--seconds 1]
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MARK = b"p4switch-bench"
DEFAULT_RATES = "5000,10000,15000,20000,25000,30000,35000,40000,50000"


# ---- frames ---------------------------------------------------------------------------------
def _csum(data: bytes) -> int:
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(size: int, run: int, sport: int = 49152) -> bytes:
    """A UDP frame of `size` bytes whose payload carries the marker and the run number."""
    tag = MARK + struct.pack("!I", run)
    payload_len = max(len(tag), size - 14 - 20 - 8)
    payload = tag + bytes(payload_len - len(tag))
    udp = struct.pack("!HHHH", sport, 4791 + 1, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     socket.inet_aton("10.0.1.1"), socket.inet_aton("10.0.2.1"))
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    eth = bytes.fromhex("020000000002020000000001") + b"\x08\x00"
    return eth + ip + udp


# ---- workers (run inside a host namespace through `ip netns exec`) -------------------------
def raw(iface: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 3))
    s.setsockopt(socket.SOL_SOCKET, 33, 64 * 1024 * 1024)  # SO_RCVBUFFORCE (root)
    s.setsockopt(socket.SOL_SOCKET, 32, 4 * 1024 * 1024)  # SO_SNDBUFFORCE
    s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
    return s


def worker_send(iface: str, rate: int, seconds: float, size: int, run: int) -> None:
    """Paced in 1 ms batches with sleeps in between, so that the sender leaves the CPU to the
    switch (a busy-waiting sender would take a whole core of the two)."""
    s = raw(iface)
    frame = udp_frame(size, run)
    n = int(rate * seconds)
    send, clock = s.send, time.perf_counter
    start = clock()
    sent = 0
    while sent < n:
        due = min(n, int((clock() - start) * rate) + 1)
        while sent < due:
            send(frame)
            sent += 1
        time.sleep(0.001)
    elapsed = clock() - start
    print(f"{n} {elapsed:.6f}", flush=True)


def worker_recv(iface: str, run: int) -> None:
    """Counts this run's frames (late frames of earlier runs are not counted)."""
    tag = MARK + struct.pack("!I", run)
    s = raw(iface)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    count = 0
    recv = s.recv
    while not stop:
        r, _, _ = select.select([s], [], [], 0.05)
        if not r:
            continue
        s.setblocking(False)
        try:
            while True:
                if tag in recv(2048):
                    count += 1
        except BlockingIOError:
            pass
        s.setblocking(True)
    print(count, flush=True)


# ---- orchestration -------------------------------------------------------------------------
def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


class Bench:
    def __init__(self) -> None:
        self.tag = f"swb{os.getpid() % 10000}"
        self.ns: list[str] = []
        self.links: list[str] = []

    def setup(self) -> tuple[str, str]:
        for i in (1, 2):
            ns = f"{self.tag}h{i}"
            sh("ip", "netns", "add", ns)
            self.ns.append(ns)
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            sw = f"{self.tag}p{i}"
            sh("ip", "link", "add", sw, "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.links.append(sw)
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw}.disable_ipv6=1")
            sh("ip", "link", "set", sw, "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
        return self.links[0], self.links[1]

    def cleanup(self) -> None:
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for ns in self.ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_switch(args: list[str], thrift_port: int = 0) -> tuple[subprocess.Popen, str, float]:
    grpc_port = free_port()
    argv = [sys.executable, "-m", "p4switch.cli.switch", "--thrift-port",
            str(thrift_port or free_port()), *args, "--", "--grpc-server-addr",
            f"127.0.0.1:{grpc_port}"]
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                            stderr=subprocess.DEVNULL)
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"p4switch exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", grpc_port), timeout=0.1):
                break
        except OSError:
            time.sleep(0.002)
    return proc, f"127.0.0.1:{grpc_port}", time.monotonic() - start


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def program_ecmp(addr: str, p4info, device_config: bytes) -> None:
    """Route 10.0.2.0/24 to port 2 through a one-member ECMP group."""
    import grpc
    from p4.v1 import p4runtime_pb2 as pb
    from p4.v1 import p4runtime_pb2_grpc

    def find(items, suffix):
        return next(x for x in items if x.preamble.name.endswith(suffix))

    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        req = pb.SetForwardingPipelineConfigRequest(
            device_id=0, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        stub.SetForwardingPipelineConfig(req)
        table = find(p4info.tables, "ipv4_lpm")
        action = find(p4info.actions, "set_next_hop")
        profile = p4info.action_profiles[0]
        member = pb.ActionProfileMember(action_profile_id=profile.preamble.id, member_id=1)
        member.action.action_id = action.preamble.id
        member.action.params.add(param_id=1, value=b"\x02")
        member.action.params.add(param_id=2, value=bytes.fromhex("020000000002"))
        group = pb.ActionProfileGroup(action_profile_id=profile.preamble.id, group_id=1)
        group.members.add(member_id=1, weight=1)
        entry = pb.TableEntry(table_id=table.preamble.id)
        lpm = entry.match.add(field_id=1).lpm
        lpm.value, lpm.prefix_len = socket.inet_aton("10.0.2.0"), 24
        entry.action.action_profile_group_id = 1
        write = pb.WriteRequest(device_id=0)
        for kind, name, msg in (("INSERT", "action_profile_member", member),
                                ("INSERT", "action_profile_group", group),
                                ("INSERT", "table_entry", entry)):
            u = write.updates.add(type=pb.Update.Type.Value(kind))
            getattr(u.entity, name).CopyFrom(msg)
        stub.Write(write)


_runs = iter(range(1, 1 << 31))


def run_rate(ns_tx: str, ns_rx: str, rate: int, seconds: float, size: int) -> tuple[int, int]:
    """(sent, received) for one paced run; frames still in flight 0.5 s after the last one
    was sent count as lost."""
    me = str(Path(__file__).resolve())
    run = next(_runs)
    rx = subprocess.Popen(["ip", "netns", "exec", ns_rx, sys.executable, me, "--worker", "recv",
                           "eth0", str(run)], stdout=subprocess.PIPE, text=True)
    assert rx.stdout.readline().strip() == "ready"
    tx = subprocess.run(["ip", "netns", "exec", ns_tx, sys.executable, me, "--worker", "send",
                         "eth0", str(rate), str(seconds), str(size), str(run)],
                        capture_output=True, text=True, check=True)
    sent = int(tx.stdout.split()[0])
    time.sleep(0.5)
    rx.send_signal(signal.SIGTERM)
    received = int(rx.communicate(timeout=10)[0].strip())
    time.sleep(0.5)  # a backlog left in the switch drains before the next run
    return sent, received


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    p.add_argument("--rates", default=DEFAULT_RATES)
    p.add_argument("--seconds", type=float, default=5.0,
                   help="per rate; long enough that socket buffers cannot hide a deficit")
    p.add_argument("--sizes", default="64,1000")
    p.add_argument("--queue-rate", type=int, default=0, metavar="PPS",
                   help="also rate-limit the egress queue of port 2 (packets then go through "
                   "the traffic manager's queues instead of straight to egress)")
    args = p.parse_args()
    if args.worker:
        kind, *rest = args.worker
        if kind == "send":
            worker_send(rest[0], int(rest[1]), float(rest[2]), int(rest[3]), int(rest[4]))
        else:
            worker_recv(rest[0], int(rest[1]))
        return 0
    if os.geteuid() != 0:
        print("switch_pps: needs root (namespaces, raw sockets)", file=sys.stderr)
        return 1

    from p4switch.compiler import compile_program
    from p4switch.p4info import build_p4info

    program = compile_program(REPO / "p4src" / "ecmp.p4")
    p4info = build_p4info(program.model)
    bench = Bench()
    try:
        p1, p2 = bench.setup()
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "ecmp.p4switch.json"
            config.write_bytes(program.device_config())
            proc, _, t_nop4 = start_switch(["--no-p4"])
            stop(proc)
            proc, _, t_src = start_switch(["-i", f"1@{p1}", str(REPO / "p4src" / "ecmp.p4")])
            stop(proc)
            thrift = free_port()
            proc, addr, t_cfg = start_switch(["-i", f"1@{p1}", "-i", f"2@{p2}", str(config)],
                                             thrift)
            print(f"start-up to gRPC ready: --no-p4 {t_nop4:.3f} s, ecmp.p4 source "
                  f"{t_src:.3f} s, ecmp.p4switch.json {t_cfg:.3f} s")
            try:
                program_ecmp(addr, p4info, program.device_config())
                if args.queue_rate:
                    subprocess.run([sys.executable, "-m", "p4switch.cli.runtime_cli",
                                    "--thrift-port", str(thrift), "set_queue_rate",
                                    str(args.queue_rate), "2"], cwd=REPO, check=True,
                                   env=dict(os.environ, PYTHONPATH=str(REPO)))
                    print(f"egress queue of port 2 limited to {args.queue_rate} pps")
                rates = [int(r) for r in args.rates.split(",")]
                for size in (int(s) for s in args.sizes.split(",")):
                    best = 0
                    for rate in rates:
                        sent, received = run_rate(bench.ns[0], bench.ns[1], rate, args.seconds,
                                                  size)
                        loss = sent - received
                        print(f"  {size:5d} B  offered {rate:6d} pps  sent {sent:6d}  "
                              f"received {received:6d}  loss {loss}")
                        if loss:
                            break  # the highest rate before the first loss is the figure
                        best = rate
                    print(f"{size} B frames: max rate without loss {best} pps")
            finally:
                stop(proc)
    finally:
        bench.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
