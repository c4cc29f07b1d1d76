"""Bring-up checks of a fabric spread over several servers; each failure is one line naming the
cause and the setting to change (docs/cluster.md, "Set-up").

At connection, per server (`check_server`): the same checkout (the same commit at the same path),
a clock within `MAX_CLOCK_OFFSET_S` of this machine's, and sshd accepting as many concurrent
sessions as the run will hold there (`MaxSessions`). After the links are built, before any
switch starts (`check_links`): every link between servers carries a frame each way. The frames
are sent and received by this module on each server
(`python -m topos.mininet.cluster_checks probe ...`), inside a NIC's namespace through `mnexec`.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topos.mininet.cluster_servers import ClusterError, LocalServer, SshServer

REPO = Path(__file__).resolve().parents[2]
MAX_CLOCK_OFFSET_S = 0.5
PROBE_ETHERTYPE = 0x88B5  # IEEE local experimental
PROBE_DST = bytes.fromhex("0180c200000e")  # link-local: no bridge forwards it
PROBE_SRC = bytes.fromhex("020000000001")
PROBE_TAG = b"fabric-lab-probe "
PACKET_OUTGOING = 4
SESSION_REFUSED = "Session open refused by peer"


# ---- per server -------------------------------------------------------------------------
def check_server(server: SshServer, sessions: int) -> None:
    """The server runs this checkout, keeps this machine's time and serves `sessions`
    concurrent ssh sessions; else ClusterError saying which."""
    check_checkout(server)
    check_clock(server)
    check_sessions(server, sessions)


def local_commit() -> str | None:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def check_checkout(server: SshServer) -> None:
    done = server.run(["sh", "-c", f"test -d {REPO}/topos || exit 3; "
                                   f"git -C {REPO} rev-parse HEAD 2>/dev/null || true"],
                      check=False)
    if done.returncode == 3:
        raise ClusterError(f"{server.name} has no checkout of the lab at {REPO}: every server "
                           f"needs the same checkout at the same path (docs/cluster.md)")
    _refused(server, done)
    here, there = local_commit(), done.stdout.strip() or None
    if here != there:
        raise ClusterError(f"{server.name} runs a different checkout: {REPO} is at commit "
                           f"{(there or 'none')[:12]} there, {(here or 'none')[:12]} here; "
                           f"update it to the same commit (docs/cluster.md)")


def clock_offset(server: SshServer) -> tuple[float, float]:
    """(offset of the server's clock from ours in seconds, uncertainty: half the round trip)."""
    before = time.time()
    done = server.run(["date", "+%s.%N"], check=False)
    after = time.time()
    _refused(server, done)
    try:
        remote = float(done.stdout.strip())
    except ValueError:
        raise ClusterError(f"{server.name}: cannot read its clock (`date +%s.%N` printed "
                           f"{done.stdout.strip()!r})") from None
    return remote - (before + after) / 2, (after - before) / 2


def check_clock(server: SshServer) -> None:
    offset, error = clock_offset(server)
    if abs(offset) - error > MAX_CLOCK_OFFSET_S:
        side = "ahead of" if offset > 0 else "behind"
        raise ClusterError(f"the clock of {server.name} is {abs(offset):.1f} s {side} this "
                           f"machine's: synchronise both (chrony or systemd-timesyncd against "
                           f"the same source; docs/cluster.md)")


def check_sessions(server: SshServer, count: int) -> None:
    """Hold `count` sessions open at once on the shared connection, as the run will. A session
    sshd refuses (MaxSessions) makes ssh fall back to a connection of its own, which works
    here but hangs Mininet's node shells: its message on stderr is what tells."""
    held = []
    errors = []
    try:
        for _ in range(count):
            held.append(subprocess.Popen([*server.ssh(), "echo ok $PPID; exec cat"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
        answered = []
        for proc in held:
            assert proc.stdout is not None  # a pipe
            answered.append(proc.stdout.readline().split())
    finally:
        for proc in held:  # each ends once its stdin closes
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            errors.append(err or "")
    # other stderr output is the server's shell start-up talking (profiles), not a failure
    failed = [err.strip() for words, err in zip(answered, errors, strict=True)
              if len(words) != 2 or words[0] != "ok"]
    if failed and not any(SESSION_REFUSED in err for err in errors):
        raise ClusterError(f"{server.name}: an ssh session failed: {failed[0] or 'no output'}")
    # sessions of the shared connection are children of one sshd process; one that ssh had to
    # open on a connection of its own was refused there (whether or not ssh said so)
    if failed or len({words[1] for words in answered}) > 1:
        raise ClusterError(session_refused(server, count))


def session_refused(server: SshServer, needed: int) -> str:
    return (f"sshd on {server.name} refuses sessions: this run holds {needed} at once; set "
            f"`MaxSessions 200` in its sshd_config (docs/cluster.md)")


def _refused(server: SshServer, done: subprocess.CompletedProcess) -> None:
    if SESSION_REFUSED in (done.stderr or ""):
        raise ClusterError(session_refused(server, 1))


# ---- per link between servers -----------------------------------------------------------
@dataclass(frozen=True)
class LinkEnd:
    server: LocalServer | SshServer
    netns_pid: int | None  # the NIC namespace's shell pid on its server; None: root namespace
    intf: str


@dataclass(frozen=True)
class CrossLink:
    a: LinkEnd
    b: LinkEnd
    tunnel: str  # "ssh" or "gre": what to suspect when frames do not pass


def check_links(links: Sequence[CrossLink], timeout: float = 3.0) -> None:
    """Send a frame each way over every link and fail naming the first link (and direction)
    that did not carry one."""
    if not links:
        return
    groups: dict[tuple[int, int | None], tuple[Any, list[str]]] = {}
    for link in links:
        for end, peer in ((link.a, link.b), (link.b, link.a)):
            key = (id(end.server), end.netns_pid)
            groups.setdefault(key, (end, []))[1].append(f"{end.intf}:{peer.intf}")
    procs = []
    try:
        for end, specs in groups.values():
            argv = [sys.executable, "-m", "topos.mininet.cluster_checks", "probe",
                    "--timeout", str(timeout), *specs]
            if end.netns_pid is not None:
                argv = ["mnexec", "-a", str(end.netns_pid), *argv]
            procs.append(end.server.popen(argv, cwd=str(REPO), stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
        for proc in procs:  # every receiver listens before anyone sends
            line = proc.stdout.readline().strip()
            if line != "ready":
                proc.wait()
                raise ClusterError(f"link check could not start: {line} "
                                   f"{proc.stderr.read().strip()}")
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        heard: dict[str, list[str]] = {}
        for proc in procs:
            out, err = proc.communicate(timeout=timeout + 30)
            if proc.returncode != 0:
                raise ClusterError(f"link check failed: {err.strip()}")
            heard.update(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for link in links:
        for src, dst in ((link.a, link.b), (link.b, link.a)):
            if src.intf not in heard.get(dst.intf, []):
                raise ClusterError(no_frames(link, src, dst))


def no_frames(link: CrossLink, src: LinkEnd, dst: LinkEnd) -> str:
    what = (f"the {link.tunnel} tunnel {src.intf}@{src.server.name} -> "
            f"{dst.intf}@{dst.server.name} carries no frames")
    if link.tunnel == "gre":
        return (f"{what}: GRE (IP protocol 47) must pass between the servers and both need "
                f"`ip_gre` (docs/cluster.md)")
    return f"{what}: check `PermitTunnel yes` in the sshd_config of both servers (docs/cluster.md)"


# ---- the probe, run on each server ------------------------------------------------------
def probe_frame(intf: str) -> bytes:
    return PROBE_DST + PROBE_SRC + PROBE_ETHERTYPE.to_bytes(2, "big") + PROBE_TAG + intf.encode()


def probe(pairs: list[tuple[str, str]], timeout: float) -> dict[str, list[str]]:
    """On this server (and namespace): listen on each interface, wait for "go" on stdin, send
    one frame (three times) from each, and return which peers' frames each interface heard."""
    socks: dict[socket.socket, str] = {}
    for intf, _ in pairs:
        subprocess.run(["ip", "link", "set", "dev", intf, "up"], check=True, capture_output=True)
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(PROBE_ETHERTYPE))
        sock.bind((intf, PROBE_ETHERTYPE))
        sock.setblocking(False)
        socks[sock] = intf
    print("ready", flush=True)
    sys.stdin.readline()
    expected = {intf: peer for intf, peer in pairs}
    heard: dict[str, list[str]] = {intf: [] for intf, _ in pairs}
    deadline = time.monotonic() + timeout
    next_send, sends = 0.0, 0
    while time.monotonic() < deadline:
        if sends < 3 and time.monotonic() >= next_send:
            for sock, intf in socks.items():
                sock.send(probe_frame(intf))
            sends, next_send = sends + 1, time.monotonic() + 0.2
        if sends >= 3 and all(expected[i] in heard[i] for i in heard):
            break
        ready, _, _ = select.select(list(socks), [], [], 0.05)
        for sock in ready:
            while True:
                try:
                    data, addr = sock.recvfrom(2048)
                except BlockingIOError:
                    break
                payload = data[14:]
                if addr[2] != PACKET_OUTGOING and payload.startswith(PROBE_TAG):
                    peer = payload[len(PROBE_TAG):].decode(errors="replace")
                    if peer not in heard[socks[sock]]:
                        heard[socks[sock]].append(peer)
    for sock in socks:
        sock.close()
    return heard


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m topos.mininet.cluster_checks")
    sub = parser.add_subparsers(dest="command", required=True)
    pr = sub.add_parser("probe", help="exchange a frame over links (run by check_links)")
    pr.add_argument("ends", nargs="+", help="INTF:PEER_INTF, one per link end here")
    pr.add_argument("--timeout", type=float, default=3.0)
    args = parser.parse_args(argv)
    pairs = [tuple(e.split(":", 1)) for e in args.ends]
    print(json.dumps(probe([(a, b) for a, b in pairs], args.timeout)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
