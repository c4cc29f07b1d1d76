"""The lab's one traffic tool: `python -m traffic ACTION` (and `fabric-lab traffic ACTION`, the
same commands under the lab's command line).

    send        RoCEv2 queue pairs from one interface (`traffic.sender`)
    recv        receive and report per queue pair (`traffic.receiver`)
    paced       paced flows through the host's own UDP stack, per-packet arrival records
                (`traffic.paced`: send | recv | trace)
    worker      JSON-lines sender/receiver driven by a controller (`traffic.worker`, `Agent`)

Everything that drives traffic (the lab's command line, the Mininet CLI's `traffic` command, the
experiments) runs these, in-process or as `python -m traffic ...` inside a host.
"""

from __future__ import annotations

import argparse
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any

from topos.errors import FabricLabError
from traffic.entropy import SPRAY_POLICIES

_SI = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}
_BIN = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class UsageError(FabricLabError):
    """Bad input found after parsing (exit status 2)."""


def rate(text: str) -> float:
    """10M, 2.5G, 500k, 1e6 (bits per second); must be > 0."""
    m = re.fullmatch(r"\s*([-+]?[0-9.]+(?:e[0-9]+)?)\s*([kmgKMG]?)(?:b(?:it)?/?s|bps)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad rate {text!r} (e.g. 10M, 2.5G)")
    value = float(m.group(1)) * _SI[m.group(2).lower()]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"rate must be > 0, got {text!r}")
    return value


def size(text: str) -> int:
    """64K, 1M, 1500 (bytes, K = 1024); must be > 0."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([kmgKMG]?)(?:i?B)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (e.g. 4096, 64K, 1M)")
    value = int(m.group(1)) * _BIN[m.group(2).lower()]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"size must be > 0, got {text!r}")
    return value


def positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
        return value

    return parse


HELP = "RoCEv2 senders and receivers"
DESCRIPTION = "RoCEv2 traffic: send, receive, paced flows (collectives: fabric-lab perf)."


def add_actions(sub: argparse._SubParsersAction) -> None:
    """The tool's actions, under `sub` (`python -m traffic`'s or `fabric-lab traffic`'s)."""
    s = sub.add_parser("send", help="send RoCEv2 queue pairs from this host",
                       description="Send RDMA WRITE/SEND messages on one interface, paced, "
                                   "with congestion control (DCQCN reacting to CNPs, or HPCC "
                                   "to the INT its ACKs echo) and PFC pause honoured.")
    s.add_argument("--iface", required=True, help="interface to send on")
    s.add_argument("--dst", required=True, action="append",
                   help="destination host (IPv4 or name); repeat for several")
    s.add_argument("--dst-mac", help="next-hop MAC (default: from the neighbour table)")
    s.add_argument("--qps", type=positive(int), default=1, help="queue pairs per destination")
    s.add_argument("--qpn", type=positive(int), default=100, help="first QPN")
    s.add_argument("--rate", type=rate, default=rate("10M"), help="start rate per QP (10M)")
    s.add_argument("--size", type=size, default=size("64K"), help="message size (64K)")
    s.add_argument("--messages", type=positive(int), help="messages per QP (default: 1, "
                   "or unlimited with --duration)")
    s.add_argument("--duration", type=positive(float), help="stop after this many seconds")
    s.add_argument("--verb", choices=["write", "send"], default="write")
    s.add_argument("--tag", action="store_true", help="add the DLB reorder tag")
    s.add_argument("--int-hops", type=int, default=0, metavar="N",
                   help="ask the switches for in-band telemetry, up to N records (0: off)")
    s.add_argument("--mtu", type=positive(int), default=1024, help="payload bytes per packet")
    s.add_argument("--dscp", type=int, default=26)
    s.add_argument("--priority", type=int, default=3, help="PFC priority of the data")
    s.add_argument("--link-rate", type=rate, default=rate("100M"), help="for PFC pause timing")
    s.add_argument("--no-ecn", action="store_true", help="send Not-ECT instead of ECT(0)")
    s.add_argument("--cc", choices=["dcqcn", "hpcc", "none"],
                   help="congestion control (default dcqcn; hpcc asks for INT and an ACK per "
                        "packet)")
    s.add_argument("--no-dcqcn", action="store_true", help="ignore CNPs (= --cc none)")
    s.add_argument("--hpcc-rtt", type=positive(float), default=5.0, metavar="MS",
                   help="HPCC's base RTT T in ms (5)")
    s.add_argument("--ack-every", type=positive(int),
                   help="ask for an ACK every N packets (default 16, 1 with --cc hpcc)")
    s.add_argument("--no-go-back-n", action="store_true",
                   help="send every PSN once, no ACK waiting or resending (UC-like)")
    s.add_argument("--selective", action="store_true",
                   help="resend only the PSNs the receiver NAKs (its recv needs --selective)")
    s.add_argument("--entropies", type=positive(int), default=1, metavar="N",
                   help="send each QP's packets from N UDP source ports (paths), chosen per "
                        "packet by --spray (1)")
    s.add_argument("--spray", choices=SPRAY_POLICIES, default="oblivious",
                   help="oblivious: the entropies in turn; reps: reuse those that came back "
                        "clean (default oblivious)")
    s.add_argument("--json", type=Path, help="write the result here")
    s.add_argument("--progress", type=float, default=1.0, help="seconds between progress lines")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_send, prog=s.prog)

    r = sub.add_parser("recv", help="receive RoCEv2 traffic and report per QP",
                       description="Receive on one interface; per QP goodput, loss, reordering, "
                                   "ECN/CNP and FCT; CSV time series and a JSON summary.")
    r.add_argument("--iface", required=True)
    r.add_argument("--duration", type=positive(float), help="stop after this many seconds")
    r.add_argument("--idle-timeout", type=positive(float), default=2.0,
                   help="stop this long after the last packet (2)")
    r.add_argument("--expect", action="append", default=[], metavar="SRC:QPN:BYTES",
                   help="stop once these flows are delivered; repeatable")
    r.add_argument("--bin", type=positive(float), default=10.0, help="time bin in ms (10)")
    r.add_argument("--cnp-interval", type=float, default=50.0, help="min ms between CNPs per QP")
    r.add_argument("--no-cnp", action="store_true")
    r.add_argument("--no-go-back-n", action="store_true",
                   help="no NAKs: count losses and reordering instead of asking for resends")
    r.add_argument("--selective", action="store_true",
                   help="place packets out of order and NAK each lost PSN (senders: --selective)")
    r.add_argument("--cnp-on-ooo", action="store_true",
                   help="also answer a PSN gap in an untagged flow with a CNP")
    r.add_argument("--out-dir", type=Path, default=Path("."),
                   help="where recv.csv and recv.json go (.)")
    r.add_argument("--csv", type=Path, help="time series CSV path (default OUT_DIR/recv.csv)")
    r.add_argument("--json", type=Path, help="summary JSON path (default OUT_DIR/recv.json)")
    r.add_argument("--progress", type=float, default=1.0)
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_recv, prog=r.prog)

    paced = sub.add_parser("paced", help="paced flows through the host's UDP stack",
                           description="Paced RoCEv2 flows through the host's own network stack "
                                       "(a NIC's ports share them as its routes say), with "
                                       "per-packet arrival records as JSON lines "
                                       "(traffic.paced).")
    _add_paced_roles(paced)
    w = sub.add_parser("worker", help="JSON-lines worker a controller drives (traffic.agent)",
                       description="Read send/recv requests as JSON lines on stdin, report "
                                   "on stdout (traffic.worker).")
    w.set_defaults(func=_worker)


def paced_flow(text: str) -> tuple[str, int, int]:
    try:
        dst, qpn, sport = text.split(":")
        socket.inet_aton(dst)
        return dst, int(qpn), int(sport)
    except (ValueError, OSError):
        raise argparse.ArgumentTypeError(f"flow {text!r}: want DST_IP:QPN:SPORT") from None


def _add_paced_roles(parser: argparse.ArgumentParser) -> None:
    """`send`, `recv` and `trace` under `parser` (`python -m traffic paced ROLE`)."""
    sub = parser.add_subparsers(dest="role", required=True)
    tx = sub.add_parser("send")
    tx.add_argument("--flow", type=paced_flow, action="append", required=True)
    tx.add_argument("--pps", type=float, default=400.0, help="datagrams per second per flow")
    tx.add_argument("--size", type=int, default=256, help="UDP payload bytes")
    tx.add_argument("--duration", type=float, default=0.0, help="seconds (0: until SIGTERM)")
    tx.add_argument("--pacer", choices=("auto", "c", "python"), default="auto",
                    help="the pacing loop: in C (traffic/c/paced_send.c), in Python, or in C "
                    "where it can be built (default)")
    tx.set_defaults(func=_paced, parser=tx)
    tr = sub.add_parser("trace")
    tr.add_argument("--flow", type=paced_flow, action="append", required=True)
    tr.add_argument("--count", type=int, default=40, help="datagrams per flow")
    tr.set_defaults(func=_paced, parser=tr)
    rx = sub.add_parser("recv")
    rx.add_argument("--t0", type=float, default=0.0, help="epoch seconds of bin 0 (default now)")
    rx.add_argument("--bin", type=float, default=0.01)
    rx.add_argument("--gap", type=float, default=0.005, help="record silences longer than this")
    rx.add_argument("--report", type=float, default=0.1)
    rx.add_argument("--reader", choices=("auto", "c", "python"), default="auto",
                    help="the receive loop and records: in C (traffic/c/paced_recv.c), in "
                    "Python, or in C where it can be built (default)")
    rx.set_defaults(func=_paced, parser=rx)
    build = sub.add_parser("build", help="build the C pacer and reader into the compile cache",
                           description="Build the C pacing and receive loops "
                                       "(traffic/c/paced_send.c, paced_recv.c) now, as `make "
                                       "setup` does, so that no worker builds them; exit 1 "
                                       "naming what cannot be built (workers then use Python).")
    build.set_defaults(func=_build_c_loops)


def _paced(args: argparse.Namespace) -> int:
    from traffic.paced import send, trace
    from traffic.paced_recv import receive

    if args.role == "send":
        if args.pps <= 0:
            args.parser.error("--pps must be > 0")
        send(args.flow, args.pps, args.size, args.duration, args.pacer)
    elif args.role == "trace":
        if args.count <= 0:
            args.parser.error("--count must be > 0")
        trace(args.flow, args.count)
    else:
        receive(args.t0 or time.time(), args.bin, args.gap, args.report, args.reader)
    return 0


def _build_c_loops(_args: argparse.Namespace) -> int:
    from p4switch.native import NativeUnavailable
    from traffic.paced import send_library
    from traffic.paced_recv import receive_library

    failed = 0
    for what, build in (("pacer (traffic/c/paced_send.c)", send_library),
                        ("reader (traffic/c/paced_recv.c)", receive_library)):
        try:
            print(f"paced build: the C {what}: {build()._name}")
        except NativeUnavailable as e:
            print(f"paced build: the C {what} cannot be built here: {e}", file=sys.stderr)
            failed = 1
    return failed


def fail(args: argparse.Namespace, message: str) -> int:
    print(f"{args.prog}: error: {message}", file=sys.stderr)
    return 2


def _worker(_args: argparse.Namespace) -> int:
    from traffic.worker import main as worker

    return worker()


def mbps(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mb/s"


def _send(args: argparse.Namespace) -> int:
    from traffic import netutil
    from traffic.sender import QueuePairConfig, SenderConfig, run_sender

    try:
        if args.no_dcqcn and args.cc not in (None, "none"):
            raise UsageError(f"--no-dcqcn contradicts --cc {args.cc}")
        netutil.require_interface(args.iface)
        dsts = [netutil.resolve_host(d) for d in args.dst]
        messages = args.messages or (None if args.duration else 1)
        qps = [QueuePairConfig(dst_ip=ip, qpn=args.qpn + i * args.qps + k, rate_bps=args.rate,
                               message_bytes=args.size, messages=messages,
                               dst_mac=args.dst_mac, verb=args.verb, tag=args.tag,
                               int_hops=args.int_hops, entropies=args.entropies,
                               spray=args.spray)
               for i, ip in enumerate(dsts) for k in range(args.qps)]
        cfg = SenderConfig(iface=args.iface, qps=qps, mtu_payload=args.mtu, dscp=args.dscp,
                           ecn_capable=not args.no_ecn, priority=args.priority,
                           link_bps=args.link_rate, dcqcn=not args.no_dcqcn, cc=args.cc,
                           hpcc_rtt_s=args.hpcc_rtt / 1000, ack_every=args.ack_every,
                           duration_s=args.duration, progress_s=0 if args.quiet else args.progress,
                           go_back_n=not args.no_go_back_n, selective=args.selective)
        problems = cfg.problems()
        if problems:
            raise UsageError("; ".join(problems))

        def progress(res: Any) -> None:
            print(f"sent {res.packets} packets, {res.payload_bytes} B in {res.elapsed_s:.1f} s",
                  file=sys.stderr, flush=True)

        result = run_sender(cfg, on_progress=progress)
    except (UsageError, netutil.NetError, ValueError) as e:
        return fail(args, str(e))
    d = result.to_dict()
    if args.json:
        from traffic.results import write_json

        write_json(args.json, d)
    if not args.quiet:
        for q in result.qps:
            print(f"QP {q.qpn} -> {q.dst_ip}: {q.packets} packets, {q.payload_bytes} B, "
                  f"{q.messages} messages, {q.cnps} CNPs, final rate {mbps(q.final_rate_bps)}, "
                  f"resent {q.retransmitted_packets} ({q.naks} NAKs, {q.timeouts} timeouts)")
        print(f"total {result.packets} packets in {result.elapsed_s:.3f} s ({result.pps:.0f} pps)")
    return 0


def _expect(text: str) -> Any:
    from traffic import netutil
    from traffic.receiver import ExpectedFlow

    parts = text.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise UsageError(f"bad --expect {text!r} (SRC:QPN:BYTES)")
    return ExpectedFlow(netutil.resolve_host(parts[0]), int(parts[1]), int(parts[2]))


def _recv(args: argparse.Namespace) -> int:
    from traffic import netutil
    from traffic.receiver import ReceiverConfig, run_receiver
    from traffic.results import write_receiver

    try:
        for iface in args.iface.split(","):  # a multi-port NIC: every port
            netutil.require_interface(iface.strip())
        cfg = ReceiverConfig(iface=args.iface, duration_s=args.duration,
                             idle_timeout_s=args.idle_timeout,
                             expect=[_expect(e) for e in args.expect], bin_s=args.bin / 1000,
                             cnp=not args.no_cnp, cnp_interval_s=args.cnp_interval / 1000,
                             cnp_on_out_of_order=args.cnp_on_ooo,
                             go_back_n=not args.no_go_back_n, selective=args.selective)
        problems = cfg.problems()
        if problems:
            raise UsageError("; ".join(problems))

        def progress(res: Any) -> None:
            print(f"received {res.packets} packets, {res.bytes} B from {len(res.qps)} QPs "
                  f"in {res.elapsed_s:.1f} s", file=sys.stderr, flush=True)

        def ready() -> None:
            if not args.quiet:
                print(f"listening on {args.iface}", file=sys.stderr, flush=True)

        result, _ = run_receiver(cfg, ready=ready, on_progress=None if args.quiet else progress,
                                 progress_s=args.progress)
    except (UsageError, netutil.NetError, ValueError) as e:
        return fail(args, str(e))
    csv_path = args.csv or args.out_dir / "recv.csv"
    json_path = args.json or args.out_dir / "recv.json"
    write_receiver(result, csv_path, json_path)
    if not args.quiet:
        for q in result.qps:
            print(f"QP {q.qpn} from {q.src_ip}: {q.packets} packets, {q.bytes} B, "
                  f"{mbps(q.goodput_bps)}, lost {q.lost}, out of order {q.out_of_order}, "
                  f"CE {q.ce_marked}, CNPs {q.cnp_sent}")
        print(f"wrote {csv_path} and {json_path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m traffic ACTION ...`."""
    parser = argparse.ArgumentParser(prog="python -m traffic", description=DESCRIPTION)
    add_actions(parser.add_subparsers(dest="traffic_command", metavar="ACTION", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
