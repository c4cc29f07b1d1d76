"""Link shaping with tc: rate (HTB), one-way delay (netem) and queue depth in packets.

Each end of a link shapes its own egress, so both directions see the link's rate, delay and
queue. With a delay the queue limit is netem's; without one it is a pfifo under the HTB class.
Kernels built without sch_netem (some VMs) cannot delay: then the queue still gets its pfifo and
`netem_available()` is False, so callers can warn that delays are not emulated.
"""

from __future__ import annotations

import functools
import gzip
import subprocess
from pathlib import Path

from topos.model import Link


@functools.cache
def netem_available() -> bool:
    """False when the running kernel's config says sch_netem is not built."""
    config = Path("/proc/config.gz")
    if not config.exists():
        return True  # cannot tell; tc will report a missing qdisc
    with gzip.open(config, "rt") as f:
        text = f.read()
    return "CONFIG_NET_SCH_NETEM=y" in text or "CONFIG_NET_SCH_NETEM=m" in text


# A fast link may send back to back what it carries in FAST_LINK_BURST_S, or
# FAST_LINK_BURST_FRAMES frames of its MTU if that is more (never less than a slow link's rate
# bucket), in both of its HTB buckets: 31 KB at 1000 Mb/s, 25 KB (six 4 KB frames) at 100 Mb/s
# with MTU 4200. With less, the link paces out the bursts a busy machine's scheduling makes
# anyway (a switch kept off the CPU for a millisecond forwards what arrived meanwhile at once)
# and the batches the collective engines send (jobs/ccl/c/fabric.c): the class then releases
# one frame per timer, each frame wakes the next switch on its own, and a 1000 Mb/s fabric
# carried a fifth less (docs/packet-hop.md, "Where a fabric's CPU goes").
# Links up to FAST_LINK_MBPS (every experiment's: the fastest, lb-compare's, reach 80 Mb/s)
# keep tc's one-frame ceil bucket and a 15 KB rate bucket, as they always had, unless they carry
# jumbo frames (JUMBO_MTU and more: the job fabrics' RoCE MTU 4096): a job's engines send in
# batches at any rate, and one frame per timer would cost a switch wake-up per frame and hop.
FAST_LINK_MBPS = 80.0
JUMBO_MTU = 4000
FAST_LINK_BURST_S = 250e-6
FAST_LINK_BURST_FRAMES = 6
SLOW_LINK_BURST = "15k"  # the rate bucket of a slower link
SLOW_LINK_BURST_BYTES = 15 * 1024
ETHERNET_HEADER = 14


def fast_link_burst(rate_mbps: float, mtu: int | None = None) -> int | None:
    """Both HTB buckets of a link of `rate_mbps` and `mtu` (None: the kernel's 1500), in
    bytes; None for a link up to FAST_LINK_MBPS that carries no jumbo frames (a 15 KB rate
    bucket, tc's one-frame ceil bucket)."""
    if rate_mbps <= FAST_LINK_MBPS and (mtu or 1500) < JUMBO_MTU:
        return None
    frames = FAST_LINK_BURST_FRAMES * ((mtu or 1500) + ETHERNET_HEADER)
    return max(int(rate_mbps * 1e6 / 8 * FAST_LINK_BURST_S), frames, SLOW_LINK_BURST_BYTES)


def rate_bucket_bytes(link: Link) -> int:
    """The bytes `link`'s shaper lets through at once beyond its rate (0: not rate-shaped)."""
    if link.rate_mbps is None:
        return 0
    return fast_link_burst(link.rate_mbps, link.mtu) or SLOW_LINK_BURST_BYTES


def tc_batch(intf: str, link: Link, *, netem: bool) -> list[str]:
    """`tc -batch` lines shaping the egress of `intf` as `link` says (empty if unshaped)."""
    lines: list[str] = []
    parent = "root"
    if link.rate_mbps is not None:
        burst = fast_link_burst(link.rate_mbps, link.mtu)
        buckets = f"burst {burst} cburst {burst}" if burst else f"burst {SLOW_LINK_BURST}"
        lines += [f"qdisc replace dev {intf} root handle 5: htb default 1",
                  f"class add dev {intf} parent 5: classid 5:1 htb rate {link.rate_mbps:g}mbit "
                  f"{buckets}"]
        parent = "parent 5:1"
    verb = "add" if parent != "root" else "replace"
    if link.delay_ms and netem:
        limit = f" limit {link.queue_pkts}" if link.queue_pkts is not None else ""
        lines.append(f"qdisc {verb} dev {intf} {parent} handle 10: netem delay "
                     f"{link.delay_ms:g}ms{limit}")
    elif link.queue_pkts is not None:
        lines.append(f"qdisc {verb} dev {intf} {parent} handle 10: pfifo limit {link.queue_pkts}")
    return lines


def run_tc_batch(lines: list[str], popen_argv_prefix: list[str] | None = None) -> None:
    """Run tc batch lines, in the root namespace or through `popen_argv_prefix` (e.g. mnexec)."""
    if not lines:
        return
    argv = [*(popen_argv_prefix or []), "tc", "-batch", "-"]
    done = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"tc failed shaping links: {done.stderr.strip()}")
