"""Test networks: host namespaces linked by veth pairs to switch interfaces in this namespace.

Every name starts with `sw` plus the test process id, and everything is removed on exit.
Frames are sent and received in a host namespace through AF_PACKET sockets opened there
(the opening thread enters the namespace with setns for the duration of the socket() call).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import socket
import subprocess
import threading
import time

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_setns_lock = threading.Lock()


def run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


class TestNet:
    def __init__(self, tag: str = ""):
        self.prefix = f"sw{os.getpid() % 100000}{tag}"
        self.namespaces: list[str] = []
        self.links: list[str] = []

    def host(self, name: str) -> str:
        ns = f"{self.prefix}{name}"
        run("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        run("ip", "-n", ns, "link", "set", "lo", "up")
        return ns

    def link(self, ns: str, host_if: str, n: int) -> str:
        """A veth between `host_if` in namespace `ns` and a switch interface (returned)."""
        sw_if = f"{self.prefix}p{n}"
        run("ip", "link", "add", sw_if, "type", "veth", "peer", "name", host_if, "netns", ns)
        self.links.append(sw_if)
        with contextlib.suppress(subprocess.CalledProcessError):
            run("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1")
        run("ip", "link", "set", sw_if, "up")
        run("ip", "-n", ns, "link", "set", host_if, "up")
        return sw_if

    def wire(self, n: int) -> tuple[str, str]:
        """A veth pair between two switch interfaces, both in this namespace."""
        a, b = f"{self.prefix}w{n}a", f"{self.prefix}w{n}b"
        run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        self.links.append(a)
        for end in (a, b):
            with contextlib.suppress(subprocess.CalledProcessError):
                run("sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1")
            run("ip", "link", "set", end, "up")
        return a, b

    def set_up(self, iface: str, up: bool, ns: str | None = None) -> None:
        cmd = ["ip"] + (["-n", ns] if ns else []) + ["link", "set", iface,
                                                    "up" if up else "down"]
        run(*cmd)

    def cleanup(self) -> None:
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.links, self.namespaces = [], []

    def __enter__(self) -> TestNet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def raw_socket(ns: str, iface: str) -> socket.socket:
    """An AF_PACKET socket bound to `iface` inside namespace `ns`."""
    with _setns_lock:
        own = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
        target = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {ns} failed")
            try:
                sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
                sock.bind((iface, 3))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 * 1024 * 1024)
                sock.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back failed")
        finally:
            os.close(own)
            os.close(target)
    return sock


def recv_frames(sock: socket.socket, timeout: float, count: int | None = None,
                match=None) -> list[bytes]:
    """Frames received within `timeout` s (stops early once `count` matching ones arrived)."""
    out: list[bytes] = []
    deadline = time.monotonic() + timeout
    while count is None or len(out) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            break
        try:
            data = sock.recv(65536)
        except OSError:  # ENETDOWN once after the interface went down
            continue
        if match is None or match(data):
            out.append(data)
    return out


def drain(sock: socket.socket) -> None:
    sock.setblocking(False)
    try:
        while True:
            sock.recv(65536)
    except BlockingIOError:
        pass
    except OSError:  # ENETDOWN once after the interface went down
        pass
    finally:
        sock.setblocking(True)
