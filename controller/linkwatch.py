"""Link events for the controller: poll the operational state of the switches' interfaces.

P4Runtime 1.4 carries no port status, so the controller watches the interfaces the fabric model
names (`<switch>-eth<port>`, in the namespace the controller runs in, where Mininet keeps switch
interfaces) and reports each change once. Polling every 200 ms matches BMv2's own port monitor.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from controller.periodic import Periodic
from topos.model import FabricSpec

SYS_NET = Path("/sys/class/net")
LinkCallback = Callable[[str, int, bool], None]  # (switch, port, up)


def interface_up(intf: str) -> bool | None:
    """True/False from the kernel's operstate; None when the interface does not exist."""
    try:
        state = (SYS_NET / intf / "operstate").read_text().strip()
    except OSError:
        return None
    return state in ("up", "unknown")  # veths report "up"; some drivers only "unknown"


def interface_counter(intf: str, counter: str) -> int | None:
    """One of the kernel's statistics of `intf` (`rx_packets`, `tx_dropped`, ...), None when
    the interface is not here."""
    try:
        return int((SYS_NET / intf / "statistics" / counter).read_text())
    except (OSError, ValueError):
        return None


def veth_peers() -> dict[str, str]:
    """Every veth of this namespace whose other end is here too -> that end (each names the
    other's index in `iflink`; other interfaces name themselves)."""
    links: dict[int, tuple[str, int]] = {}  # ifindex -> (name, iflink)
    for intf in SYS_NET.iterdir():
        try:
            links[int((intf / "ifindex").read_text())] = (intf.name,
                                                          int((intf / "iflink").read_text()))
        except (OSError, ValueError):
            continue  # gone meanwhile
    peers = {}
    for index, (name, peer_index) in links.items():
        peer = links.get(peer_index)
        if peer_index != index and peer is not None and peer[1] == index:
            peers[name] = peer[0]
    return peers


def interface_rx_packets(intf: str) -> int | None:
    """Frames the kernel has received on `intf` (its statistics), None when it is not here."""
    return interface_counter(intf, "rx_packets")


def root_queues() -> dict[str, tuple[int, int]]:
    """Per interface in this namespace, its root qdisc's (drops so far, frames queued now): a
    shaped link's queue overflowing (congestion) and what it still holds; {} when tc cannot
    tell."""
    try:
        done = subprocess.run(["tc", "-s", "-j", "qdisc", "show"], capture_output=True,
                              text=True, timeout=5, check=True)
        qdiscs = json.loads(done.stdout or "[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    return {q["dev"]: (int(q.get("drops", 0)), int(q.get("qlen", 0))) for q in qdiscs
            if isinstance(q, dict) and q.get("root") and "dev" in q}


class LinkWatcher:
    """Calls `on_change(switch, port, up)` whenever a switch interface changes state."""

    def __init__(self, spec: FabricSpec, on_change: LinkCallback, interval: float = 0.2):
        self.ports = {(ln.end(sw.name).port, sw.name): ln.end(sw.name).intf
                      for sw in spec.switches for ln in spec.links_of(sw.name)}
        self.on_change = on_change
        self.interval = interval
        self._state = {key: interface_up(intf) for key, intf in self.ports.items()}
        self._loop = Periodic("link-watch", interval, self._notify)

    def down_now(self) -> list[tuple[str, int]]:
        """(switch, port) of the interfaces that exist and are down at the last look."""
        return [(switch, port) for (port, switch), up in self._state.items() if up is False]

    def poll(self) -> list[tuple[str, int, bool]]:
        """One pass: the changes since the previous pass (missing interfaces count as down)."""
        changes = []
        for (port, switch), intf in self.ports.items():
            now = bool(interface_up(intf))
            if bool(self._state[(port, switch)]) != now:
                changes.append((switch, port, now))
            self._state[(port, switch)] = now
        return changes

    def _notify(self) -> None:
        for switch, port, up in self.poll():
            self.on_change(switch, port, up)

    def start(self) -> LinkWatcher:
        self._loop.start()
        return self

    def stop(self) -> None:
        self._loop.stop(timeout=None)
