"""Failing links and switches of a running fabric: what the Mininet CLI (`topos.mininet.cli`),
the web view, the labs and the experiments use to inject failures.

A link is named by its two nodes (`ta-s0r0 agga0`) or by one of its interfaces
(`ta-s0r0-eth3`). Failing it sets its switch-side interface down: the far end loses carrier, as
with a cut cable, so both switches (and a NIC's multipath route) see the port go down. A
**silent drop** leaves the link up and discards a fraction of the frames each switch end sends:
a classic-BPF program reading the kernel's random number, attached in direct-action mode to
the interface's `clsact` egress hook (this kernel has neither `sch_netem` nor `gact`; the
switch's packet socket sits before the egress hook, so the switch counts the frame as sent and
the far end never sees it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from topos.errors import FabricLabError
from topos.mininet.patch import PatchError, is_patched, set_patch
from topos.model import FabricSpec, Link

SKF_AD_RANDOM = (1 << 32) - 0x1000 + 56  # SKF_AD_OFF + SKF_AD_RANDOM as an unsigned k
TC_ACT_OK, TC_ACT_SHOT = 0, 2


class LinkError(FabricLabError, ValueError):
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


DROP_FILTER = ("egress", "protocol", "all", "pref", "1", "handle", "1")  # its one place


def set_silent_drop(spec: FabricSpec, link: Link, fraction: float) -> list[str]:
    """Drop `fraction` of the frames leaving each switch end of `link`; 0 removes the drop.
    Only the filter changes: the `clsact` qdisc is added once and then kept, because adding
    or deleting a qdisc swaps the interface's transmit queues, which discards what the link's
    queue holds and what is sent meanwhile (a loss the drop did not cause)."""
    ends = switch_ends(spec, link)
    for intf in ends:
        if fraction > 0:
            if not has_clsact(intf):
                _ip(["tc", "qdisc", "add", "dev", intf, "clsact"], "adding clsact")
            _ip(["tc", "filter", "replace", "dev", intf, *DROP_FILTER, "bpf", "da", "bytecode",
                 drop_program(fraction)], "attaching the drop filter")
        else:
            subprocess.run(["tc", "filter", "del", "dev", intf, *DROP_FILTER, "bpf"],
                           capture_output=True, check=False)  # none set: nothing to remove
    return ends


def has_clsact(intf: str) -> bool:
    """Whether `intf` has a clsact qdisc (the hook the silent drop's filter sits on)."""
    done = subprocess.run(["tc", "qdisc", "show", "dev", intf, "clsact"], capture_output=True,
                          text=True, check=False)
    return "clsact" in done.stdout


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
