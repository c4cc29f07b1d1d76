"""A user-space link impairment relay: a deterministic stand-in for `tc netem` on RoCE traffic.

Runs in a namespace between two interfaces and forwards every frame both ways. RoCE data
frames going from `ingress` to `egress` can be dropped, held back (reordered) or ECN-CE marked,
chosen by PSN, so tests know exactly what the receiver must report. Each fault hits the first
frame of a flow with that PSN only: a retransmission (go-back-N) passes.
- drop PSN p: the frame is discarded;
- hold PSN p for k: the frame is released right after k later data frames went out
  (reorder distance k), or after `hold_timeout_s` if the flow ends first;
- mark PSN p: ECN set to CE (the IPv4 checksum is fixed; the ICRC does not cover ECN);
- corrupt PSN p: one payload bit flipped, so the ICRC no longer matches;
- loss P: every data frame, first transmission or not, is discarded with probability P (a
  lossy link; `--seed` makes the draws repeatable);
- delay D ms: every frame, both ways, leaves D ms after it arrived (a long link: the
  bandwidth-delay product of a fast fabric at an emulated rate);
- tag: insert the DLB reorder tag as the first switch of a DLB fabric does (flags = switch),
  with a sequence counter per flow starting at `tag_from`, or one counter shared by all flows
  (two flows in one slot of the switch's flow table). Tagging happens before the faults.

    python -m traffic.impair --ingress m0 --egress m1 --drop 5,9 --hold 20:3 --mark 30-39
prints {"event": "ready"} when forwarding and a JSON line of counts when stopped (SIGTERM);
`relay_in(ns, ...)` runs it in a namespace for as long as a `with` block.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import select
import signal
import socket
import subprocess
import sys
import time
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from traffic import bpf, netutil
from traffic.frames import ECN_CE, add_tag, set_ipv4_checksum
from traffic.headers import DATA_OPCODES, ROCE_UDP_PORT, TAG_FLAG_SWITCH, TAG_IP_PROTO
from traffic.hosts import NetnsHost, python_argv
from traffic.wire import (
    ETH_TYPE,
    ICRC_LEN,
    IP_ADDRS,
    IP_HEADER,
    IP_PROTO_AT,
    IP_TOS_AT,
    IP_VER_IHL_AT,
    IPV4_NO_OPTIONS,
    PLAIN,
    PLAIN_FLOW,
    TAGGED,
    roce_layout,
)

_IPV4_TYPE = (0x0800).to_bytes(2, "big")
_UDP_PROTO = 17
_LAYOUTS = {_UDP_PROTO: PLAIN, TAG_IP_PROTO: TAGGED}  # IPv4 protocol -> RoCE layout


@dataclass
class Impairments:
    drop: set[int] = field(default_factory=set)
    hold: dict[int, int] = field(default_factory=dict)  # PSN -> frames to wait
    mark: set[int] = field(default_factory=set)
    corrupt: set[int] = field(default_factory=set)
    tag_from: int | None = None  # tag untagged data frames, counters starting here
    tag_shared: bool = False  # one counter for all flows
    hold_timeout_s: float = 0.5
    loss: float = 0.0  # every data frame dropped with this probability
    seed: int = 0
    delay_s: float = 0.0  # every frame, both ways, held this long


@dataclass
class RelayCounts:
    forwarded: int = 0
    reverse: int = 0
    dropped: int = 0
    held: int = 0
    marked: int = 0
    corrupted: int = 0
    tagged: int = 0
    lost: int = 0  # data frames the random loss took


def data_psn(frame: bytes | bytearray) -> int | None:
    """PSN of a RoCE data frame (tagged or not), else None."""
    if len(frame) < PLAIN.bth_end or frame[ETH_TYPE] != _IPV4_TYPE or frame[IP_VER_IHL_AT] != IPV4_NO_OPTIONS:
        return None
    at = _LAYOUTS.get(frame[IP_PROTO_AT])
    if at is None or int.from_bytes(frame[at.dport], "big") != ROCE_UDP_PORT:
        return None
    if frame[at.opcode] not in DATA_OPCODES:
        return None
    return int.from_bytes(frame[at.psn], "big")


class Relay:
    def __init__(self, ingress: str, egress: str, imp: Impairments) -> None:
        self.imp = imp
        self.counts = RelayCounts()
        self.a = netutil.packet_socket(ingress, netutil.ETH_P_ALL, rcvbuf=4 << 20)
        self.b = netutil.packet_socket(egress, netutil.ETH_P_ALL, rcvbuf=4 << 20)
        for s in (self.a, self.b):
            bpf.attach(s, bpf.incoming_filter())
            netutil.drain(s)
        self._held: list[list] = []  # [frames still to wait, since, frame]
        self._tag_seq: dict[bytes, int] = {}  # flow (addresses + UDP ports) -> next tag seq
        self._seen: set[tuple[bytes, int]] = set()  # (flow, PSN) already forwarded once
        self._draw = random.Random(imp.seed).random
        self._delayed: deque[tuple[float, socket.socket, bytes]] = deque()  # (due, out, frame)
        self._stop = False

    def stop(self) -> None:
        self._stop = True

    def _forward(self, frame: bytes | bytearray) -> None:
        psn = data_psn(frame)
        data = psn is not None
        if data and self.imp.tag_from is not None and frame[IP_PROTO_AT] == _UDP_PROTO:
            frame = self._tag(frame)
        if data and self.imp.loss and self._draw() < self.imp.loss:
            self.counts.lost += 1
            return
        if psn is not None:
            # (addresses, QPN, PSN): faults hit the first frame of a QP's PSN only
            key = (bytes(frame[IP_ADDRS]) + bytes(frame[roce_layout(frame).dqpn]), psn)
            if key in self._seen:
                psn = None
            self._seen.add(key)
        if psn is not None:
            imp = self.imp
            if psn in imp.drop:
                self.counts.dropped += 1
                return
            if psn in imp.mark:
                frame = bytearray(frame)
                ip = bytearray(frame[IP_HEADER])
                ip[IP_TOS_AT - IP_HEADER.start] |= ECN_CE
                set_ipv4_checksum(ip)
                frame[IP_HEADER] = ip
                self.counts.marked += 1
            if psn in imp.corrupt:
                frame = bytearray(frame)
                frame[-ICRC_LEN - 1] ^= 0x01  # last payload byte, just before the ICRC
                self.counts.corrupted += 1
            if psn in imp.hold and imp.hold[psn] > 0:
                self._held.append([imp.hold[psn], time.monotonic(), bytes(frame)])
                self.counts.held += 1
                return
        self._out(self.b, frame)
        self.counts.forwarded += 1
        if data and self._held:
            for h in self._held:
                h[0] -= 1
            self._release(lambda h: h[0] <= 0)

    def _tag(self, frame: bytes | bytearray) -> bytes:
        flow = b"" if self.imp.tag_shared else bytes(frame[PLAIN_FLOW])
        seq = self._tag_seq.get(flow, self.imp.tag_from or 0)  # set whenever tagging
        self._tag_seq[flow] = seq + 1
        self.counts.tagged += 1
        flow_id = zlib.crc32(flow) & 0xFFFF
        return add_tag(frame, flow_id, seq, TAG_FLAG_SWITCH)

    def _release(self, due) -> None:
        keep = []
        for h in self._held:
            if due(h):
                self._out(self.b, h[2])
                self.counts.forwarded += 1
            else:
                keep.append(h)
        self._held = keep

    def _out(self, sock: socket.socket, frame: bytes | bytearray) -> None:
        if self.imp.delay_s:
            self._delayed.append((time.monotonic() + self.imp.delay_s, sock, bytes(frame)))
        else:
            sock.send(frame)

    def _send_due(self) -> float:
        """Send the delayed frames whose time has come; seconds until the next (or 0.05)."""
        delayed = self._delayed
        now = time.monotonic()
        while delayed and delayed[0][0] <= now:
            _, sock, frame = delayed.popleft()
            sock.send(frame)
        return min(0.05, delayed[0][0] - now) if delayed else 0.05

    def run(self) -> RelayCounts:
        a, b = self.a, self.b
        while not self._stop:
            ready, _, _ = select.select([a, b], [], [], self._send_due())
            if a in ready:
                self._forward(a.recv(65536))
            if b in ready:
                self._out(a, b.recv(65536))
                self.counts.reverse += 1
            if self._held:
                cutoff = time.monotonic() - self.imp.hold_timeout_s
                self._release(lambda h, cutoff=cutoff: h[1] < cutoff)
        self._release(lambda h: True)
        for _, sock, frame in self._delayed:  # stopping: what is on the wire still arrives
            sock.send(frame)
        return self.counts


@contextlib.contextmanager
def relay_in(ns: str, ingress: str, egress: str, args: Sequence[str] = ()
             ) -> Iterator[dict[str, Any]]:
    """The relay in namespace `ns` between `ingress` and `egress` with `args` (this module's
    options) while in the block; yields a dict that holds its counts once it stopped."""
    host = NetnsHost("relay", ns, "", "")
    proc = host.popen(python_argv("traffic.impair", "--ingress", ingress, "--egress", egress,
                                  *args),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    counts: dict[str, Any] = {}
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()  # readiness: it prints once its sockets are open
        if not line or json.loads(line).get("event") != "ready":
            raise RuntimeError(f"impair relay did not start: {proc.stderr.read().strip()}")
        yield counts
    finally:
        proc.terminate()
        out, _err = proc.communicate(timeout=10)
        if out.strip():
            counts.update(json.loads(out.strip().splitlines()[-1]))


def _psns(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m traffic.impair", description=__doc__.split("\n")[0])
    p.add_argument("--ingress", required=True, help="interface the data arrives on")
    p.add_argument("--egress", required=True, help="interface towards the receiver")
    p.add_argument("--drop", default="", help="PSNs to drop: 5,9,20-29")
    p.add_argument("--hold", default="", help="PSN:frames pairs to hold back: 20:3,40:1")
    p.add_argument("--mark", default="", help="PSNs to mark ECN-CE")
    p.add_argument("--corrupt", default="", help="PSNs whose payload gets a flipped bit")
    p.add_argument("--tag-from", type=int, default=None,
                   help="tag data frames as a DLB switch does, sequence counters from here")
    p.add_argument("--tag-shared", action="store_true", help="one tag counter for all flows")
    p.add_argument("--loss", type=float, default=0.0,
                   help="drop every data frame with this probability (0..1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the loss draws")
    p.add_argument("--delay-ms", type=float, default=0.0,
                   help="hold every frame, both ways, this long (ms)")
    args = p.parse_args(argv)
    if not 0.0 <= args.loss <= 1.0 or args.delay_ms < 0:
        print(f"impair: --loss must be within 0..1 (got {args.loss}) and --delay-ms >= 0 "
              f"(got {args.delay_ms})", file=sys.stderr)
        return 2
    try:
        pairs = (x.split(":") for x in filter(None, args.hold.split(",")))
        hold = {int(k): int(v) for k, v in pairs}
        imp = Impairments(drop=_psns(args.drop), hold=hold, mark=_psns(args.mark),
                          corrupt=_psns(args.corrupt), tag_from=args.tag_from,
                          tag_shared=args.tag_shared, loss=args.loss, seed=args.seed,
                          delay_s=args.delay_ms / 1000)
        relay = Relay(args.ingress, args.egress, imp)
    except (ValueError, netutil.NetError) as e:
        print(f"impair: {e}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: relay.stop())
    signal.signal(signal.SIGINT, lambda *_: relay.stop())
    print(json.dumps({"event": "ready"}), flush=True)
    counts = relay.run()
    print(json.dumps({"event": "counts", **asdict(counts)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
