"""The probe agent: one process in a host's namespace that sends the probe frames it is given and
reports the probes it received (`python -m controller.diagnose.agent --iface IF [--iface IF2]`).

Standard library only (no scapy), so a fabric's worth of agents start in a fraction of a second.
The frames are built by the caller (`controller.diagnose.probes`) and decoded there too; the agent
only recognises a probe by its marker bytes and hands back the frame up to the probe id.

Protocol, one JSON object per line:
    agent -> caller  {"ready": true}                       receiving now
    caller -> agent  {"bursts": [[hex, ...], ...], "gap_s": G, "expect": N, "idle_s": I,
                      "max_s": M, "marker": hex, "sink_protos": [253, 254], "udp_port": 4791}
    agent -> caller  {"sent": n, "unsent": [i, ...], "received": [hex, ...]}
(`unsent`: the frames, counted over all bursts in order, that the interface refused.)
Each burst goes out back to back, then the agent listens `gap_s`; after the last burst it listens
until it has `expect` probes, or none came for `idle_s` (counted from the last burst or the last
probe, whichever is later), or `max_s` have passed since it started.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import socket
import sys
import time
from typing import Any

ETH_P_ALL = 0x0003
PROBE_ID_LEN = 4  # the probe id follows the marker


def _sinks(protos: list[int], udp_port: int) -> list[socket.socket]:
    """Sockets that keep the kernel from answering the probes with ICMP unreachables."""
    sinks = []
    for kind, proto, addr in ([(socket.SOCK_DGRAM, 0, ("0.0.0.0", udp_port))]
                              + [(socket.SOCK_RAW, p, None) for p in protos]):
        s = socket.socket(socket.AF_INET, kind, proto)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            if addr:
                s.bind(addr)
        except OSError:  # already held in this namespace (a receiver of the traffic tool)
            s.close()
            continue
        sinks.append(s)
    return sinks


class Receiver:
    """Probe frames arriving on a NIC's interfaces (both ports of a dual-homed NIC), kept up to
    their probe id."""

    def __init__(self, ifaces: list[str]) -> None:
        self.socks = []
        for iface in ifaces:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            sock.bind((iface, ETH_P_ALL))
            self.socks.append(sock)
        self.marker = b""
        self.received: list[str] = []
        self.last = 0.0

    def poll(self, timeout: float) -> None:
        """Read what arrives within `timeout` seconds."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            ready = select.select(self.socks, [], [], left)[0] if left > 0 else []
            if not ready:
                return
            for sock in ready:
                self._drain(sock)

    def _drain(self, sock: socket.socket) -> None:
        while True:
            try:
                frame, addr = sock.recvfrom(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            if addr[2] == socket.PACKET_OUTGOING or not self.marker:
                continue
            at = frame.find(self.marker)
            if at >= 0:
                self.received.append(frame[: at + len(self.marker) + PROBE_ID_LEN].hex())
                self.last = time.monotonic()


def run(ifaces: list[str], requests: Any = sys.stdin, out: Any = sys.stdout) -> int:
    """Receive on every interface of `ifaces`, send on the first."""
    started = time.monotonic()
    receiver = Receiver(ifaces)
    sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    sender.bind((ifaces[0], 0))
    print(json.dumps({"ready": True}), file=out, flush=True)
    line = requests.readline()
    if not line:
        return 1
    plan = json.loads(line)
    receiver.marker = bytes.fromhex(plan["marker"])
    sinks = _sinks(list(plan.get("sink_protos", [])), int(plan.get("udp_port", 4791)))
    sent, unsent = 0, list[int]()
    try:
        for burst in plan["bursts"]:
            for frame in burst:
                try:
                    sender.send(bytes.fromhex(frame))
                except OSError:  # a full interface queue (ENOBUFS): this one never left
                    unsent.append(sent + len(unsent))
                    continue
                sent += 1
            receiver.poll(float(plan["gap_s"]))
        deadline = started + float(plan["max_s"])
        idle = float(plan["idle_s"])
        sent_at = time.monotonic()
        while len(receiver.received) < int(plan["expect"]) and time.monotonic() < deadline:
            since = time.monotonic() - max(receiver.last, sent_at)
            if since >= idle:
                break
            receiver.poll(min(0.05, idle - since))
    finally:
        for s in sinks:
            with contextlib.suppress(OSError):
                s.close()
    print(json.dumps({"sent": sent, "unsent": unsent, "received": receiver.received}),
          file=out, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.diagnose.agent",
                                     description="Send and receive diagnose probes on one "
                                                 "interface (JSON lines on stdin/stdout).")
    parser.add_argument("--iface", required=True, action="append",
                        help="the NIC's interface (repeat for each port; sends on the first)")
    args = parser.parse_args(argv)
    try:
        return run(args.iface)
    except OSError as err:
        print(f"diagnose agent: {', '.join(args.iface)}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
