"""`python -m traffic collective` (and `fabric-lab traffic collective`): a collective over
hosts, step by step, from the command line (`traffic.command`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from traffic.command import UsageError, fail, mbps, positive, rate, size


def add_collective(sub: argparse._SubParsersAction) -> None:
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
    c.set_defaults(func=_collective, prog=c.prog)


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
        return fail(args, str(e))
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
        return fail(args, str(e))
    d = result.to_dict(sched.busbw_factor)
    if args.json:
        from traffic.results import write_json

        write_json(args.json, d)
    print(f"{sched.name}: {len(result.steps)} steps, {result.total_s * 1000:.1f} ms, "
          f"algbw {mbps(result.algbw_bps)}, busbw {mbps(d['busbw_bps'])}"
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
