"""What a host process needs from its network namespace: interface facts, neighbours, sockets."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import ipaddress
import socket
import struct
import time
from pathlib import Path

from topos.errors import FabricLabError

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
SIOCGIFADDR = 0x8915
SIOCGIFHWADDR = 0x8927
SIOCGIFMTU = 0x8921
PACKET_OUTGOING = 4  # sll_pkttype of frames this host sent
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33
PR_SET_TIMERSLACK = 29


class NetError(FabricLabError, RuntimeError):
    """A missing interface, address or neighbour: the message says which."""


def interface_exists(iface: str) -> bool:
    """In this process's network namespace (not /sys, which shows the namespace that mounted
    it: `nsenter --net` and Mininet hosts keep the root namespace's sysfs)."""
    try:
        socket.if_nametoindex(iface)
    except OSError:
        return False
    return True


def require_interface(iface: str) -> None:
    if not interface_exists(iface):
        names = sorted(name for _, name in socket.if_nameindex())
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        raise NetError(f"interface {iface!r} does not exist here (present: {shown})")


def interface_mac(iface: str) -> str:
    require_interface(iface)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        raw = fcntl.ioctl(s.fileno(), SIOCGIFHWADDR, struct.pack("256s", iface.encode()[:15]))
    return ":".join(f"{b:02x}" for b in raw[18:24])


def interface_mtu(iface: str) -> int:
    require_interface(iface)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        raw = fcntl.ioctl(s.fileno(), SIOCGIFMTU, struct.pack("256s", iface.encode()[:15]))
    return struct.unpack_from("i", raw, 16)[0]


def interface_ip(iface: str) -> str:
    """The interface's primary IPv4 address."""
    require_interface(iface)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            raw = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", iface.encode()[:15]))
        except OSError as e:
            raise NetError(f"interface {iface!r} has no IPv4 address") from e
    return socket.inet_ntoa(raw[20:24])


def host_ip(iface: str) -> str:
    """The address this host sends from on `iface`: the interface's own, or, for a port
    without one (the second port of a dual-port NIC), the first address of another
    interface."""
    try:
        return interface_ip(iface)
    except NetError:
        pass
    for _, name in socket.if_nameindex():
        if name in ("lo", iface):
            continue
        try:
            return interface_ip(name)
        except NetError:
            continue
    raise NetError(f"interface {iface!r} has no IPv4 address, and neither has any other")


def validate_ipv4(text: str, what: str = "address") -> str:
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError as e:
        raise NetError(f"{what} {text!r} is not an IPv4 address") from e


def resolve_host(name: str) -> str:
    """An IPv4 address, or a host name resolved through the system resolver (/etc/hosts)."""
    try:
        return str(ipaddress.IPv4Address(name))
    except ValueError:
        pass
    try:
        return socket.gethostbyname(name)
    except OSError as e:
        raise NetError(f"unknown host {name!r}") from e


def neighbour_mac(ip: str, iface: str | None = None) -> str | None:
    """The MAC of `ip` in this namespace's neighbour table (/proc/net/arp), if complete."""
    for line in Path("/proc/net/arp").read_text().splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 6 and cols[0] == ip and (iface is None or cols[5] == iface):
            flags = int(cols[2], 16)
            if flags & 0x2 and cols[3] != "00:00:00:00:00:00":  # ATF_COM: entry complete
                return cols[3]
    return None


def resolve_mac(ip: str, iface: str, timeout: float = 3.0) -> str:
    """Neighbour MAC of `ip`: from the table (static ARP in Mininet fabrics), else by making the
    kernel resolve it (one UDP datagram to the discard port) and probing the table."""
    mac = neighbour_mac(ip, iface)
    if mac:
        return mac
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.encode())
        next_probe = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() >= next_probe:
                with contextlib.suppress(OSError):
                    s.sendto(b"", (ip, 9))
                next_probe = time.monotonic() + 0.5
            mac = neighbour_mac(ip, iface)
            if mac:
                return mac
            time.sleep(0.01)
    raise NetError(f"no neighbour entry for {ip} on {iface} (pass its MAC explicitly)")


def packet_socket(iface: str, proto: int = 0, rcvbuf: int | None = None) -> socket.socket:
    """An AF_PACKET raw socket bound to `iface`; proto 0 sends only and never receives."""
    require_interface(iface)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(proto))
    if rcvbuf:
        try:  # as root, beyond net.core.rmem_max: a receiver that stalls briefly loses nothing
            s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
        except PermissionError:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((iface, proto))
    return s


def socket_drops(s: socket.socket) -> int:
    """Frames the kernel dropped because this packet socket's buffer was full, since the last
    call (PACKET_STATISTICS resets on read)."""
    _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return drops


def drain(s: socket.socket) -> int:
    """Discard everything queued on a socket (frames received before a run started)."""
    n = 0
    s.setblocking(False)
    try:
        while True:
            s.recv(65536)
            n += 1
    except BlockingIOError:
        return n


def kernel_sinks(tag_proto: int, udp_port: int = 4791) -> list[socket.socket]:
    """Sockets that keep the kernel from answering RoCE traffic with ICMP unreachables:
    a UDP socket on the RoCE port and a raw socket for the tag protocol (both discard what
    they get)."""
    sinks = []
    for kind, proto, addr in (
        (socket.SOCK_DGRAM, 0, ("0.0.0.0", udp_port)),
        (socket.SOCK_RAW, tag_proto, None),
    ):
        s = socket.socket(socket.AF_INET, kind, proto)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            if addr:
                s.bind(addr)
        except OSError:  # already held by another receiver in this namespace
            s.close()
            continue
        sinks.append(s)
    return sinks


def tight_timers() -> None:
    """Ask the kernel for precise sleeps in this process (timer slack 1 ns instead of 50 us):
    a pacer sleeping between packets then wakes when it asked to."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux/glibc: default slack
