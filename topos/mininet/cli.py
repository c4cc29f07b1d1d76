"""Failing links of a running fabric, from code and from the Mininet CLI.

A link is named by its two nodes (`ta-s0r0 agga0`) or by one of its interfaces
(`ta-s0r0-eth3`). Failing it sets its switch-side interface down: the far end loses carrier, as
with a cut cable, so both switches (and a NIC's multipath route) see the port go down. A
**silent drop** leaves the link up and discards a fraction of the frames each switch end sends:
a classic-BPF program reading the kernel's random number, attached in direct-action mode to
the interface's `clsact` egress hook (this kernel has neither `sch_netem` nor `gact`; the
switch's packet socket sits before the egress hook, so the switch counts the frame as sent and
the far end never sees it).

`FabricCLI` is the Mininet CLI with `link_fail`, `link_restore`, `link_drop`, `switch_fail`,
`switch_restore`, `links`, `traffic` (RoCEv2 flows between NICs, `topos.mininet.traffic_cmd`)
and, when a controller runs, `events` and `lb` (the load-balancing mode).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from mininet.cli import CLI

from topos.mininet.patch import PatchError, is_patched, set_patch
from topos.mininet.traffic_cmd import TrafficError, run_traffic
from topos.model import FabricSpec, Link

SKF_AD_RANDOM = (1 << 32) - 0x1000 + 56  # SKF_AD_OFF + SKF_AD_RANDOM as an unsigned k
TC_ACT_OK, TC_ACT_SHOT = 0, 2


class LinkError(ValueError):
    """A link name that does not name exactly one link, or a failed interface command."""


def link_name(link: Link) -> str:
    return f"{link.a.node}~{link.b.node}"


def find_link(spec: FabricSpec, *names: str) -> Link:
    """The link between two nodes, or the link of one interface (also `A~B` in one word)."""
    if len(names) == 1 and "~" in names[0]:
        names = tuple(names[0].split("~", 1))
    if len(names) == 1:
        found = [ln for ln in spec.links if names[0] in (ln.a.intf, ln.b.intf)]
        what = f"interface {names[0]!r}"
    elif len(names) == 2:
        a, b = names
        found = [ln for ln in spec.links if {ln.a.node, ln.b.node} == {a, b}]
        what = f"nodes {a!r} and {b!r}"
        for node in (a, b):
            if not any(node in (ln.a.node, ln.b.node) for ln in spec.links):
                raise LinkError(f"no node named {node!r} in fabric {spec.name!r}")
    else:
        raise LinkError("name a link by its two nodes or by one interface")
    if len(found) != 1:
        raise LinkError(f"{len(found)} links join {what}" if found else f"no link for {what}")
    return found[0]


def switch_ends(spec: FabricSpec, link: Link) -> list[str]:
    """Interfaces of `link` that belong to switches (they live in the root namespace)."""
    return [end.intf for end in (link.a, link.b) if spec.is_switch(end.node)]


def _ip(argv: Sequence[str], what: str) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LinkError(f"{what}: {' '.join(argv)}: {done.stderr.strip()}")


def set_link(spec: FabricSpec, link: Link, up: bool) -> str:
    """Fail or restore a link; returns the interface it was done at. A patched link
    (`topos.mininet.patch`) loses carrier at both switch ports; any other link is set down at
    its first switch-side interface."""
    intf = switch_ends(spec, link)[0]
    if is_patched(link.a.intf):
        try:
            set_patch(link.a.intf, up)
        except PatchError as err:
            raise LinkError(str(err)) from None
        return intf
    _ip(["ip", "link", "set", "dev", intf, "up" if up else "down"],
        f"setting {link_name(link)} {'up' if up else 'down'}")
    return intf


def set_switch(spec: FabricSpec, switch: str, up: bool) -> list[str]:
    """Every link of a switch up or down (a whole switch failing); returns the interfaces."""
    if not spec.is_switch(switch):
        raise LinkError(f"no switch named {switch!r} in fabric {spec.name!r}")
    return [set_link(spec, ln, up) for ln in spec.links_of(switch)]


def drop_program(fraction: float) -> str:
    """tc's classic-BPF bytecode: drop when a random u32 is below `fraction` of 2^32."""
    if not 0.0 <= fraction <= 1.0:
        raise LinkError(f"drop fraction must be within 0..1, not {fraction}")
    threshold = min(int(fraction * (1 << 32)), (1 << 32) - 1)
    # A = random; if A >= threshold: pass, else drop
    code = [(0x20, 0, 0, SKF_AD_RANDOM), (0x35, 0, 1, threshold), (0x06, 0, 0, TC_ACT_OK),
            (0x06, 0, 0, TC_ACT_SHOT)]
    return f"{len(code)}," + ",".join(" ".join(map(str, op)) for op in code)


def set_silent_drop(spec: FabricSpec, link: Link, fraction: float) -> list[str]:
    """Drop `fraction` of the frames leaving each switch end of `link`; 0 removes the drop."""
    program = drop_program(fraction)
    ends = switch_ends(spec, link)
    for intf in ends:
        subprocess.run(["tc", "qdisc", "del", "dev", intf, "clsact"], capture_output=True,
                       check=False)  # absent when no drop was set: nothing to remove
        if fraction > 0:
            _ip(["tc", "qdisc", "add", "dev", intf, "clsact"], "adding clsact")
            _ip(["tc", "filter", "add", "dev", intf, "egress", "bpf", "da", "bytecode", program],
                "attaching the drop filter")
    return ends


def link_states(spec: FabricSpec) -> list[tuple[str, str, str]]:
    """(link name, interfaces, operational state of its switch ends) for every link."""
    out = []
    for ln in spec.links:
        states = []
        for intf in switch_ends(spec, ln):
            try:
                with open(f"/sys/class/net/{intf}/operstate") as f:
                    states.append(f.read().strip())
            except OSError:
                states.append("missing")
        out.append((link_name(ln), f"{ln.a.intf}<->{ln.b.intf}", "/".join(states)))
    return out


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
