"""Patched links: a link whose failure drops the carrier at both of its ends.

A plain veth pair can only fail by setting one of its ends administratively down, and BMv2 stops
receiving on *every* port while one of its ports is down: its port thread (`bmi_port.c`) reads
each readable port with libpcap, whose `pcap_next_ex` on a downed interface waits until the
interface comes back up. A real link failure is a loss of carrier at both ends with both ports
still enabled, which is what a patched link gives (host links too: the host's end is made in its
namespace):

    sw1-eth3 <=veth=> p<hash>a        p<hash>b <=veth=> sw2-eth2
    a's ingress: mirred ingress redirect into sw2-eth2's receive path
    b's ingress: mirred ingress redirect into sw1-eth3's receive path

A frame bound for a port in the root namespace (every switch port) crosses one veth, not two:
its patch interface hands it to the port's receive path as if it had arrived there. A tc action
cannot name an interface of another namespace, so a frame bound for a host's port leaves
through the other patch interface and its veth (`mirred egress redirect dev p<hash>b`). The
veth that a frame crosses counts it once, at the patch interface it arrives on: a port that
frames are handed to counts none (controller/probes.py reads the patch interface).

Setting the two patch interfaces (root namespace) down takes the carrier away from both ends
(operstate `lowerlayerdown`); every port stays up, so BMv2, p4switch and the controller's link
watcher all see the link go down and nothing stops receiving. Every frame, PFC pause frames
included, crosses the patch unchanged (tc `mirred` at L2; a Linux bridge would swallow
01:80:c2:00:00:0x frames). Deleting a switch port deletes its patch interface with it.
"""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path
from typing import Any

from mininet.link import Link

from topos.errors import FabricLabError

SYS_NET = Path("/sys/class/net")


class PatchError(FabricLabError, RuntimeError):
    """A patch could not be built or set."""


def patch_names(intf1: str) -> tuple[str, str]:
    """The two patch interfaces of the link whose first switch port is `intf1` (10 characters,
    derived from the port name so that anyone holding the link can find them)."""
    tag = f"{zlib.crc32(intf1.encode()):08x}"
    return f"p{tag}a", f"p{tag}b"


def _run(argv: list[str], stdin: str, what: str) -> None:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PatchError(f"{what}: {done.stderr.strip() or done.stdout.strip()}")


def _redirect(src: str, other_patch: str, end: str, end_netns: int | None) -> list[str]:
    """tc batch lines passing every frame arriving on patch interface `src` to the link's far
    `end`: into its receive path when it is in the root namespace, else out of `other_patch`
    (whose veth peer it is)."""
    how = f"ingress redirect dev {end}" if end_netns is None else f"egress redirect dev {other_patch}"
    return [f"qdisc add dev {src} ingress",
            f"filter add dev {src} parent ffff: protocol all prio 1 u32 match u32 0 0 "
            f"action mirred {how}"]


def make_patched_pair(intf1: str, intf2: str, addr1: str | None, addr2: str | None,
                      netns1: int | None = None, netns2: int | None = None,
                      mtu: int | None = None) -> None:
    """Create interfaces `intf1` and `intf2` joined through a patch; each lives in the root
    namespace or in the network namespace of process `netns1`/`netns2` (a Mininet host). `mtu`:
    of all four interfaces (None: the kernel's)."""
    pa, pb = patch_names(intf1)
    size = f" mtu {mtu}" if mtu is not None else ""
    lines = []
    for intf, addr, patch, netns in ((intf1, addr1, pa, netns1), (intf2, addr2, pb, netns2)):
        address = f" address {addr}" if addr else ""
        where = f" netns {netns}" if netns is not None else ""
        lines.append(f"link add name {patch}{size} type veth peer name {intf}{size}{address}"
                     f"{where}")
    _run(["ip", "-batch", "-"], "\n".join(lines) + "\n", f"creating link {intf1}<->{intf2}")
    for patch in (pa, pb):  # the patch sends nothing of its own (no IPv6 neighbour discovery)
        ipv6 = Path("/proc/sys/net/ipv6/conf") / patch / "disable_ipv6"
        if ipv6.exists():
            ipv6.write_text("1")
    set_patch(intf1, True)
    redirects = _redirect(pa, pb, intf2, netns2) + _redirect(pb, pa, intf1, netns1)
    _run(["tc", "-batch", "-"], "\n".join(redirects) + "\n",
         f"patching link {intf1}<->{intf2}")


def is_patched(intf1: str) -> bool:
    return (SYS_NET / patch_names(intf1)[0]).exists()


def set_patch(intf1: str, up: bool) -> tuple[str, str]:
    """Carrier on (`up`) or off at both switch ports of the patched link starting at `intf1`."""
    pa, pb = patch_names(intf1)
    state = "up" if up else "down"
    _run(["ip", "-batch", "-"], f"link set dev {pa} {state}\nlink set dev {pb} {state}\n",
         f"setting the link at {intf1} {state}")
    return pa, pb


class PatchedLink(Link):
    """A Mininet link joined through a patch (its nodes' interfaces made in their namespaces);
    `mtu`: of its interfaces (None: the kernel's)."""

    def __init__(self, *args: Any, mtu: int | None = None, **kwargs: Any) -> None:
        self.mtu = mtu
        super().__init__(*args, **kwargs)

    def makeIntfPair(self, intfname1: str, intfname2: str,
                     addr1: str | None = None, addr2: str | None = None,
                     node1: Any = None, node2: Any = None, deleteIntfs: bool = True) -> None:
        def netns(node: Any) -> int | None:
            return node.pid if node is not None and node.inNamespace else None

        make_patched_pair(intfname1, intfname2, addr1, addr2, netns(node1), netns(node2),
                          self.mtu)
