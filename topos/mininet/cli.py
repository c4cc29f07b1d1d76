"""The Mininet CLI of a running fabric (`fabric-lab up`).

`FabricCLI` is the Mininet CLI with `link_fail`, `link_restore`, `link_drop`, `switch_fail`,
`switch_restore`, `links` (failure injection, `topos.mininet.failures`), `traffic` (RoCEv2 flows
between NICs, `topos.mininet.traffic_cmd`) and, when a controller runs, `events` and `lb` (the
load-balancing mode).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from mininet.cli import CLI

from topos.mininet.failures import (
    LinkError,
    find_link,
    link_name,
    link_states,
    set_link,
    set_silent_drop,
    set_switch,
)
from topos.mininet.traffic_cmd import TrafficError, run_traffic
from topos.model import FabricSpec, Link


class FabricCLI(CLI):
    """The Mininet CLI plus commands that fail and restore links of the fabric by name.

    `events()` returns lines for the `events` command (the controller's link event log);
    `lb(mode, flowlet_gap_us)` switches the load-balancing mode (mode None: report it) and returns
    lines to show, raising ValueError (or RuntimeError) on failure."""

    prompt = "fabric> "

    def __init__(self, net: Any, spec: FabricSpec,
                 events: Callable[[], list[str]] | None = None,
                 lb: Callable[[str | None, int | None], list[str]] | None = None, **kwargs: Any):
        self.spec = spec
        self.events = events
        self.lb = lb
        super().__init__(net, **kwargs)

    def _link(self, line: str) -> Link | None:
        try:
            return find_link(self.spec, *line.split())
        except LinkError as err:
            self.stdout.write(f"*** {err}\n")
            return None

    def _run(self, action: Callable[[], object], done: str) -> None:
        try:
            action()
        except LinkError as err:
            self.stdout.write(f"*** {err}\n")
            return
        self.stdout.write(done + "\n")

    def do_link_fail(self, line: str) -> None:
        """Fail a link (its switch-side interface down). Usage: link_fail NODE1 NODE2 | INTF"""
        link = self._link(line)
        if link:
            self._run(lambda: set_link(self.spec, link, False), f"{link_name(link)} down")

    def do_link_restore(self, line: str) -> None:
        """Restore a failed link. Usage: link_restore NODE1 NODE2 | INTF"""
        link = self._link(line)
        if link:
            self._run(lambda: set_link(self.spec, link, True), f"{link_name(link)} up")

    def do_link_drop(self, line: str) -> None:
        """Silently drop PERCENT of a link's frames (0 stops). Usage: link_drop N1 N2 PERCENT"""
        *names, percent = line.split() or [""]
        try:
            fraction = float(percent) / 100
        except ValueError:
            self.stdout.write("*** usage: link_drop NODE1 NODE2 PERCENT\n")
            return
        link = self._link(" ".join(names))
        if link:
            self._run(lambda: set_silent_drop(self.spec, link, fraction),
                      f"{link_name(link)} drops {percent}% silently")

    def do_switch_fail(self, line: str) -> None:
        """Fail every link of a switch. Usage: switch_fail SWITCH"""
        self._run(lambda: set_switch(self.spec, line.strip(), False), f"{line.strip()} dark")

    def do_switch_restore(self, line: str) -> None:
        """Restore every link of a switch. Usage: switch_restore SWITCH"""
        self._run(lambda: set_switch(self.spec, line.strip(), True), f"{line.strip()} back")

    def do_links(self, _line: str) -> None:
        """List every link with the state of its switch-side interfaces."""
        for name, intfs, state in link_states(self.spec):
            self.stdout.write(f"{name:<28} {intfs:<36} {state}\n")

    def do_events(self, _line: str) -> None:
        """Show the controller's link events (detection and reroute times)."""
        lines = self.events() if self.events else ["(no controller loop is running)"]
        self.stdout.write("\n".join(lines or ["(no events yet)"]) + "\n")

    def do_lb(self, line: str) -> None:
        """Show or switch the load-balancing mode of every switch (flowlet: optional gap in us).
        Usage: lb [ecmp|flowlet [GAP_US]|dlb|qdlb]"""
        if self.lb is None:
            self.stdout.write("*** no controller is running\n")
            return
        words = line.split()
        mode = words[0] if words else None
        try:
            if len(words) > 2 or (len(words) == 2 and mode != "flowlet"):
                raise ValueError("usage: lb [ecmp|flowlet [GAP_US]|dlb|qdlb]")
            gap = int(words[1]) if len(words) == 2 else None
            lines = self.lb(mode, gap)
        except (ValueError, RuntimeError) as err:
            self.stdout.write(f"*** lb: {err}\n")
            return
        self.stdout.write("\n".join(lines) + "\n")

    def do_traffic(self, line: str) -> None:
        """Send RoCEv2 queue pairs from one NIC to another and report what arrived.
        Usage: traffic SRC DST [--rate 10M] [--size 256K] [--messages N | --duration S]
                       [--qps N] [--mtu BYTES] [--tag]    (traffic -h for every option)"""
        try:
            lines = run_traffic(self.spec, self.mn, line.split(), python=sys.executable)
        except TrafficError as err:
            self.stdout.write(f"*** traffic: {err}\n")
            return
        self.stdout.write("\n".join(lines) + "\n")
