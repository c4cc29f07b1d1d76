"""The `traffic` command of the fabric CLI: RoCEv2 queue pairs from one NIC to another, by hand.

    fabric> traffic h0n0 h2n0 --qps 2 --size 256K --messages 4

runs `python -m traffic recv` on the destination NIC (on all its ports, so a dual-homed NIC
receives from either ToR), waits until it listens, runs `python -m traffic send` on the source
NIC's first port, and returns both reports: per QP what was sent, and what arrived (goodput, loss,
reordering, ECN marks, CNPs). The receiver stops 2 s after the last packet, or at the time limit;
a sender still resending at the time limit (a path that loses everything) is stopped and the
report says so.
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import tempfile
import time
from typing import Any

from topos.errors import FabricLabError
from topos.model import FabricSpec

LISTENING = "listening on"


class TrafficError(FabricLabError, ValueError):
    """Bad arguments, an unknown NIC, or a sender/receiver that failed."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise TrafficError(f"{message}\n{self.format_usage().rstrip()}")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="traffic", add_help=False,
                description="RoCEv2 queue pairs from SRC to DST (NIC names), then the report.")
    p.add_argument("src", help="sending NIC")
    p.add_argument("dst", help="receiving NIC")
    p.add_argument("--rate", help="start rate per QP (default: 80%% of the NIC's link rate, "
                   "shared by the QPs)")
    p.add_argument("--size", default="256K", help="message size (256K)")
    ends = p.add_mutually_exclusive_group()
    ends.add_argument("--messages", type=int, default=None, help="messages per QP (4)")
    ends.add_argument("--duration", type=float, help="send for this many seconds instead")
    p.add_argument("--qps", type=int, default=1, help="queue pairs (1)")
    p.add_argument("--mtu", type=int, default=1024, help="payload bytes per packet (1024)")
    p.add_argument("--tag", action="store_true", help="the sender adds the DLB reorder tag")
    p.add_argument("--time-limit", type=float, default=60.0, help="give up after (60 s)")
    return p


def _interfaces(spec: FabricSpec, nic: str) -> list[str]:
    try:
        spec.nic(nic)
    except KeyError:
        raise TrafficError(f"no NIC named {nic!r} in fabric {spec.name!r} (e.g. "
                           f"{', '.join(n.name for n in spec.host_nics()[:3])})") from None
    return [link.end(nic).intf for link in spec.links_of(nic)]


def _wait_listening(proc: subprocess.Popen, deadline: float) -> list[str]:
    """Read the receiver's stderr until it listens; returns what it printed."""
    seen: list[str] = []
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    buffer = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        seen += [line.decode(errors="replace") for line in lines]
        if any(LISTENING in line for line in seen):
            return seen
    raise TrafficError("the receiver did not start: " + " ".join([*seen, buffer.decode()]))


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_traffic(spec: FabricSpec, net: Any, argv: list[str], *, python: str) -> list[str]:
    """Run one `traffic` command in the Mininet network `net`; returns the report lines."""
    p = parser()
    if not argv or argv[0] in ("-h", "--help"):
        return p.format_help().splitlines()
    args = p.parse_args(argv)
    src_ifs, dst_ifs = _interfaces(spec, args.src), _interfaces(spec, args.dst)
    if args.src == args.dst:
        raise TrafficError("SRC and DST must be different NICs")
    messages = args.messages or 4
    if args.qps < 1:
        raise TrafficError("--qps must be at least 1")
    if args.rate is None:  # a sender faster than its link overruns the NIC queue (ENOBUFS)
        link_mbps = spec.links_of(args.src)[0].rate_mbps or 10.0
        args.rate = f"{link_mbps * 0.8 / args.qps:.3g}M"
    tool = [python, "-m", "traffic"]  # the traffic package's own tool (traffic.command)
    with tempfile.TemporaryDirectory(prefix="fabric-traffic-") as tmp:
        recv_argv = [*tool, "recv", "--iface", ",".join(dst_ifs), "--out-dir", tmp,
                     "--idle-timeout", "2", "--duration", f"{args.time_limit:g}",
                     "--progress", "3600"]
        send_argv = [*tool, "send", "--iface", src_ifs[0], "--dst", spec.nic(args.dst).ip,
                     "--rate", args.rate, "--size", args.size, "--qps", str(args.qps),
                     "--mtu", str(args.mtu), "--progress", "3600"]
        send_argv += (["--duration", f"{args.duration:g}"] if args.duration
                      else ["--messages", str(messages)])
        if args.tag:
            send_argv.append("--tag")
        deadline = time.monotonic() + args.time_limit
        unfinished = False
        receiver = net[args.dst].popen(recv_argv, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE)
        try:
            _wait_listening(receiver, deadline)
            sender = net[args.src].popen(send_argv, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE)
            try:
                sent, send_err = sender.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # e.g. a broken path: its QPs resend forever
                _stop(sender)
                sent, send_err = sender.communicate()
                unfinished = True
            if sender.returncode != 0 and not unfinished:
                raise TrafficError(f"the sender failed: {send_err.decode(errors='replace')}")
            try:
                got, recv_err = receiver.communicate(timeout=max(5.0, deadline
                                                                 - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise TrafficError("the receiver did not finish") from None
            if receiver.returncode != 0:
                raise TrafficError(f"the receiver failed: {recv_err.decode(errors='replace')}")
        finally:
            _stop(receiver)
    out = [f"{args.src} -> {args.dst}:"]
    out += ["  sent:     " + line for line in sent.decode().splitlines()]
    if unfinished:
        out.append(f"  sent:     NOT FINISHED within {args.time_limit:g} s (stopped): some "
                   f"messages were never delivered")
    out += ["  received: " + line for line in got.decode().splitlines()
            if not line.startswith("wrote ")]
    return out
