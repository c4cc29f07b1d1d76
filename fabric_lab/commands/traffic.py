"""`fabric-lab traffic send|recv|collective`: a thin layer over the `traffic` package."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

_SI = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}
_BIN = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class UsageError(Exception):
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


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("traffic", help="RoCEv2 senders, receivers and collectives",
                              description="RoCEv2 traffic: send, receive, run collectives.")
    sub = p.add_subparsers(dest="traffic_command", metavar="ACTION")
    sub.required = True

    s = sub.add_parser("send", help="send RoCEv2 queue pairs from this host",
                       description="Send RDMA WRITE/SEND messages on one interface, paced, "
                                   "with DCQCN reacting to CNPs and PFC pause honoured.")
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
    s.add_argument("--mtu", type=positive(int), default=1024, help="payload bytes per packet")
    s.add_argument("--dscp", type=int, default=26)
    s.add_argument("--priority", type=int, default=3, help="PFC priority of the data")
    s.add_argument("--link-rate", type=rate, default=rate("100M"), help="for PFC pause timing")
    s.add_argument("--no-ecn", action="store_true", help="send Not-ECT instead of ECT(0)")
    s.add_argument("--no-dcqcn", action="store_true", help="ignore CNPs")
    s.add_argument("--no-go-back-n", action="store_true",
                   help="send every PSN once, no ACK waiting or resending (UC-like)")
    s.add_argument("--json", type=Path, help="write the result here")
    s.add_argument("--progress", type=float, default=1.0, help="seconds between progress lines")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=_send)

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
    r.add_argument("--cnp-on-ooo", action="store_true",
                   help="also answer a PSN gap in an untagged flow with a CNP")
    r.add_argument("--out-dir", type=Path, default=Path("."),
                   help="where recv.csv and recv.json go (.)")
    r.add_argument("--csv", type=Path, help="time series CSV path (default OUT_DIR/recv.csv)")
    r.add_argument("--json", type=Path, help="summary JSON path (default OUT_DIR/recv.json)")
    r.add_argument("--progress", type=float, default=1.0)
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_recv)

    c = sub.add_parser("collective", help="run a collective over hosts",
                       description="Run ring/halving-doubling allreduce, all-to-all or incast "
                                   "over hosts, step by step; report per-step and total time, "
                                   "algorithm and bus bandwidth.")
    c.add_argument("--algo", choices=["ring", "hd", "a2a", "incast"], required=True)
    c.add_argument("--size", type=size, default=size("1M"), help="data per rank (1M)")
    c.add_argument("--rate", type=rate, default=rate("10M"), help="sending rate per host (10M)")
    c.add_argument("--host", action="append", default=[], metavar="NAME=netns:NS[:IFACE]",
                   help="a host (or NAME=pid:PID[:IFACE]); repeat, in host order")
    c.add_argument("--ranks", type=positive(int), help="with --dry-run and no hosts: rank count")
    c.add_argument("--order", choices=["naive", "aware", "random", "hdrm"], default="naive",
                   help="rank -> host placement")
    c.add_argument("--groups", help="host groups for --order aware: 'h0,h1;h2,h3'")
    c.add_argument("--bigraph", metavar="M,N",
                   help="hosts per switch and switch count (for --order hdrm and conflicts)")
    c.add_argument("--seed", type=int, default=0, help="for --order random")
    c.add_argument("--mtu", type=positive(int), default=1024, help="payload bytes per packet")
    c.add_argument("--tag", action="store_true", help="hosts add the DLB reorder tag")
    c.add_argument("--step-timeout", type=positive(float), default=60.0,
                   help="give up on a step after this many seconds (60)")
    c.add_argument("--dry-run", action="store_true", help="print the schedule, send nothing")
    c.add_argument("--json", type=Path, help="write the result here")
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(func=_collective)


def _fail(args: argparse.Namespace, message: str) -> int:
    print(f"fabric-lab traffic {args.traffic_command}: error: {message}", file=sys.stderr)
    return 2


def _mbps(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mb/s"


def _send(args: argparse.Namespace) -> int:
    from traffic import netutil
    from traffic.sender import QueuePairConfig, SenderConfig, run_sender

    try:
        netutil.require_interface(args.iface)
        dsts = [netutil.resolve_host(d) for d in args.dst]
        messages = args.messages or (None if args.duration else 1)
        qps = [QueuePairConfig(dst_ip=ip, qpn=args.qpn + i * args.qps + k, rate_bps=args.rate,
                               message_bytes=args.size, messages=messages,
                               dst_mac=args.dst_mac, verb=args.verb, tag=args.tag)
               for i, ip in enumerate(dsts) for k in range(args.qps)]
        cfg = SenderConfig(iface=args.iface, qps=qps, mtu_payload=args.mtu, dscp=args.dscp,
                           ecn_capable=not args.no_ecn, priority=args.priority,
                           link_bps=args.link_rate, dcqcn=not args.no_dcqcn,
                           duration_s=args.duration, progress_s=0 if args.quiet else args.progress,
                           go_back_n=not args.no_go_back_n)
        problems = cfg.problems()
        if problems:
            raise UsageError("; ".join(problems))

        def progress(res: Any) -> None:
            print(f"sent {res.packets} packets, {res.payload_bytes} B in {res.elapsed_s:.1f} s",
                  file=sys.stderr, flush=True)

        result = run_sender(cfg, on_progress=progress)
    except (UsageError, netutil.NetError, ValueError) as e:
        return _fail(args, str(e))
    d = result.to_dict()
    if args.json:
        from traffic.results import write_json

        write_json(args.json, d)
    if not args.quiet:
        for q in result.qps:
            print(f"QP {q.qpn} -> {q.dst_ip}: {q.packets} packets, {q.payload_bytes} B, "
                  f"{q.messages} messages, {q.cnps} CNPs, final rate {_mbps(q.final_rate_bps)}, "
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
                             go_back_n=not args.no_go_back_n)
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
        return _fail(args, str(e))
    csv_path = args.csv or args.out_dir / "recv.csv"
    json_path = args.json or args.out_dir / "recv.json"
    write_receiver(result, csv_path, json_path)
    if not args.quiet:
        for q in result.qps:
            print(f"QP {q.qpn} from {q.src_ip}: {q.packets} packets, {q.bytes} B, "
                  f"{_mbps(q.goodput_bps)}, lost {q.lost}, out of order {q.out_of_order}, "
                  f"CE {q.ce_marked}, CNPs {q.cnp_sent}")
        print(f"wrote {csv_path} and {json_path}")
    return 0


def _placement(args: argparse.Namespace, names: list[str]) -> list[int]:
    """Rank -> index into `names`."""
    from traffic.collectives import placement

    n = len(names)
    if args.order == "naive":
        return list(range(n))
    if args.order == "random":
        return placement.random_order(range(n), args.seed)
    if args.order == "aware":
        if not args.groups:
            raise UsageError("--order aware needs --groups 'h0,h1;h2,h3'")
        groups = [[h for h in g.split(",") if h] for g in args.groups.split(";")]
        unknown = sorted({h for g in groups for h in g} - set(names))
        if unknown:
            raise UsageError(f"unknown host in --groups: {', '.join(unknown)}")
        order = placement.topology_aware_ring(names, groups)
        return [names.index(h) for h in order]
    m, nsw = _bigraph(args)
    if m * nsw != n:
        raise UsageError(f"--bigraph {m},{nsw} places {m * nsw} ranks, but there are {n}")
    return placement.hdrm_map(m, nsw)


def _bigraph(args: argparse.Namespace) -> tuple[int, int]:
    if not args.bigraph:
        raise UsageError("--order hdrm needs --bigraph M,N")
    try:
        m, n = (int(x) for x in args.bigraph.split(","))
    except ValueError:
        raise UsageError(f"bad --bigraph {args.bigraph!r} (M,N)") from None
    return m, n


def _collective(args: argparse.Namespace) -> int:
    from traffic.collectives import placement, schedule
    from traffic.hosts import HostSpecError, host_from_spec

    try:
        if not args.host and not (args.dry_run and args.ranks):
            raise UsageError("give --host for each rank (or --dry-run --ranks N)")
        names = [h.partition("=")[0] for h in args.host] or [f"h{i}" for i in range(args.ranks)]
        if len(set(names)) != len(names):
            raise UsageError("host names must be unique")
        sched = schedule.build(args.algo, len(names), args.size)
        rank_host = _placement(args, names)
        if args.dry_run:
            _print_schedule(args, sched, [names[i] for i in rank_host], rank_host, placement)
            return 0
        hosts = [host_from_spec(spec) for spec in args.host]
    except (UsageError, HostSpecError, ValueError) as e:
        return _fail(args, str(e))
    from traffic.collectives.runner import run_collective

    placed = [hosts[i] for i in rank_host]

    def on_step(step: Any) -> None:
        if not args.quiet:
            state = "" if step.complete else (f"  INCOMPLETE (lost {step.lost_packets}, "
                                              f"receiver drops {step.receiver_drops})")
            print(f"step {step.index} {step.phase}: {step.flows} flows, {step.bytes} B, "
                  f"{step.time_s * 1000:.1f} ms{state}", file=sys.stderr, flush=True)

    try:
        result = run_collective(sched, placed, args.rate, on_step=on_step, tag=args.tag,
                                mtu_payload=args.mtu, step_timeout_s=args.step_timeout)
    except ValueError as e:
        return _fail(args, str(e))
    d = result.to_dict(sched.busbw_factor)
    if args.json:
        from traffic.results import write_json

        write_json(args.json, d)
    print(f"{sched.name}: {len(result.steps)} steps, {result.total_s * 1000:.1f} ms, "
          f"algbw {_mbps(result.algbw_bps)}, busbw {_mbps(d['busbw_bps'])}"
          + ("" if result.complete else ", INCOMPLETE"))
    return 0 if result.complete else 1


def _print_schedule(args: argparse.Namespace, sched: Any, order: list[str],
                    rank_host: list[int], placement: Any) -> None:
    conflicts = None
    if args.bigraph:
        m, n = _bigraph(args)
        conflicts = placement.conflicts_per_step(sched, rank_host, lambda h: h // m,
                                                 placement.bigraph_route(n))
    out: dict[str, Any] = {"name": sched.name, "ranks": sched.ranks, "size": sched.size,
                           "placement": order, "steps": []}
    for i, step in enumerate(sched.steps):
        flows = [[f.src, f.dst, f.bytes] for f in step.flows]
        entry = {"phase": step.phase, "flows": flows}
        if conflicts is not None:
            entry["max_flows_per_link"] = conflicts[i]
        out["steps"].append(entry)
    if args.json:
        args.json.write_text(json.dumps(out) + "\n")
    print(f"{sched.name}: {sched.ranks} ranks, {sched.size} B per rank, "
          f"{len(sched.steps)} steps; placement (rank order): {' '.join(order)}")
    for i, step in enumerate(out["steps"]):
        sizes = sorted({f[2] for f in step["flows"]})
        pairs = " ".join(f"{a}>{b}" for a, b, _ in step["flows"])
        extra = f", max flows/link {step['max_flows_per_link']}" if conflicts is not None else ""
        print(f"step {i} {step['phase']}: {len(step['flows'])} flows of "
              f"{'/'.join(map(str, sizes))} B{extra}: {pairs}")
