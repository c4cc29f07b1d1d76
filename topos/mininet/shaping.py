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


# A fast link may send back to back what it carries in FAST_LINK_BURST_S, in both of its HTB
# buckets (31 KB at 1000 Mb/s). With less, the link paces out the bursts a busy machine's
# scheduling makes anyway (a switch kept off the CPU for a millisecond forwards what arrived
# meanwhile at once): the class then releases one frame per timer, each frame wakes the next
# switch on its own, and a 1000 Mb/s fabric carried a fifth less (docs/rates.md, "The packet
# budget"). Links up to FAST_LINK_MBPS (every experiment's) keep tc's one-frame ceil bucket and
# a 15 KB rate bucket, as they always had.
FAST_LINK_MBPS = 128.0
FAST_LINK_BURST_S = 250e-6
SLOW_LINK_BURST = "15k"  # the rate bucket of a slower link


def fast_link_burst(rate_mbps: float) -> int | None:
    """Both HTB buckets of a link of `rate_mbps`, in bytes; None for a link up to
    FAST_LINK_MBPS (a 15 KB rate bucket, tc's one-frame ceil bucket)."""
    if rate_mbps <= FAST_LINK_MBPS:
        return None
    return int(rate_mbps * 1e6 / 8 * FAST_LINK_BURST_S)


def tc_batch(intf: str, link: Link, *, netem: bool) -> list[str]:
    """`tc -batch` lines shaping the egress of `intf` as `link` says (empty if unshaped)."""
    lines: list[str] = []
    parent = "root"
    if link.rate_mbps is not None:
        burst = fast_link_burst(link.rate_mbps)
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
