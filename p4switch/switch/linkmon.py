"""Port up/down detection from rtnetlink link notifications (RTMGRP_LINK).

The kernel announces every change of an interface's flags at once, which is faster than BMv2's
200 ms polling. A port is up when its interface is administratively up and has carrier
(IFF_UP and IFF_RUNNING): a veth goes down when either end is set down or the peer is deleted.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterable

NETLINK_ROUTE = 0
RTMGRP_LINK = 1
RTM_NEWLINK = 16
RTM_DELLINK = 17
IFF_UP = 0x1
IFF_RUNNING = 0x40
_NLMSGHDR = struct.Struct("=IHHII")
_IFINFOMSG = struct.Struct("=BxHiII")


def _flags_up(flags: int) -> bool:
    return bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)


def read_link_up(iface: str) -> bool:
    """Current state of an interface from sysfs (False if it does not exist).

    sysfs `flags` lacks IFF_RUNNING, so the operational state stands in for it ("unknown" is
    what interfaces without carrier reporting show when up)."""
    try:
        with open(f"/sys/class/net/{iface}/flags") as f:
            flags = int(f.read().strip(), 16)
        with open(f"/sys/class/net/{iface}/operstate") as f:
            oper = f.read().strip()
    except (OSError, ValueError):
        return False
    return bool(flags & IFF_UP) and oper in ("up", "unknown")


class LinkMonitor:
    """Tracks the up/down state of the switch ports' interfaces.

    `fileno()` is polled by the data-plane loop; `handle()` reads pending notifications and
    calls `on_change(port, up)` for every port whose state changed.
    """

    def __init__(self, ports: Iterable[tuple[int, str, int]],
                 on_change: Callable[[int, bool], None]):
        """`ports`: (port number, interface name, ifindex)."""
        self._by_index = {ifindex: port for port, _, ifindex in ports}
        self._names = {port: name for port, name, _ in ports}
        self.on_change = on_change
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
        self.sock.bind((0, RTMGRP_LINK))
        self.sock.setblocking(False)
        # read the initial state after subscribing so that no change can be missed
        self.up = {port: read_link_up(name) for port, name in self._names.items()}

    def is_up(self, port: int) -> bool:
        return self.up.get(port, False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def handle(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError:  # ENOBUFS: notifications lost, resynchronise from sysfs
                self._resync()
                return
            self._parse(data)

    def _parse(self, data: bytes) -> None:
        offset = 0
        while offset + _NLMSGHDR.size <= len(data):
            length, msg_type, _, _, _ = _NLMSGHDR.unpack_from(data, offset)
            if length < _NLMSGHDR.size:
                return
            if msg_type in (RTM_NEWLINK, RTM_DELLINK):
                _, _, ifindex, flags, _ = _IFINFOMSG.unpack_from(data, offset + _NLMSGHDR.size)
                port = self._by_index.get(ifindex)
                if port is not None:
                    self._set(port, msg_type == RTM_NEWLINK and _flags_up(flags))
            offset += (length + 3) & ~3

    def _resync(self) -> None:
        for port, name in self._names.items():
            self._set(port, read_link_up(name))

    def _set(self, port: int, up: bool) -> None:
        if self.up.get(port) != up:
            self.up[port] = up
            self.on_change(port, up)

    def close(self) -> None:
        self.sock.close()
