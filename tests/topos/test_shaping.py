"""Link shaping on a real veth pair: a fast link's HTB class may send 250 µs of its rate, or six
frames of its MTU, back to back (both its buckets), a slow one (up to 80 Mb/s) keeps a 15 KB rate
bucket and tc's one-frame ceil bucket; the queue sits under the class."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from topos.mininet.shaping import fast_link_burst, run_tc_batch, tc_batch
from topos.model import Endpoint, Link

pytestmark = pytest.mark.root
PAIR = ("tshp0", "tshp1")


@pytest.fixture
def veth():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    subprocess.run(["ip", "link", "del", PAIR[0]], capture_output=True, check=False)
    subprocess.run(["ip", "link", "add", PAIR[0], "type", "veth", "peer", "name", PAIR[1]],
                   check=True, capture_output=True)
    try:
        yield PAIR[0]
    finally:
        subprocess.run(["ip", "link", "del", PAIR[0]], capture_output=True, check=False)


def shaped_class(intf: str, rate_mbps: float, mtu: int | None = None) -> str:
    link = Link(Endpoint("a", 1, intf), Endpoint("b", 1, PAIR[1]), rate_mbps=rate_mbps,
                queue_pkts=100, mtu=mtu)
    run_tc_batch(tc_batch(intf, link, netem=False))
    return subprocess.run(["tc", "-d", "class", "show", "dev", intf], capture_output=True,
                          text=True, check=True).stdout


def bucket_bytes(tc_class: str, bucket: str) -> int:
    """The class's `burst` or `cburst`, in bytes, as tc -d prints it."""
    match = re.search(rf" {bucket} (\d+(?:\.\d+)?)(b|Kb|Mb)", tc_class)
    assert match, tc_class
    return round(float(match[1]) * {"b": 1, "Kb": 1024, "Mb": 1024 * 1024}[match[2]])


@pytest.mark.parametrize(("rate_mbps", "mtu", "burst", "cburst"),
                         [(10_000.0, None, (310_000, 315_000), (310_000, 315_000)),
                          (1000.0, None, (31_000, 31_500), (31_000, 31_500)),
                          (1000.0, 4200, (31_000, 31_500), (31_000, 31_500)),
                          (100.0, 4200, (25_200, 25_400), (25_200, 25_400)),
                          (100.0, None, (15_300, 15_400), (15_300, 15_400)),
                          (80.0, None, (15_000, 15_400), (1, 1600)),
                          (40.0, None, (15_000, 15_400), (1, 1600)),
                          (10.0, 4200, (25_200, 25_400), (25_200, 25_400))])
def test_a_fast_or_jumbo_link_bursts_250_us_or_six_frames_a_slow_one_keeps_tc_defaults(
        veth, rate_mbps, mtu, burst, cburst):
    tc_class = shaped_class(veth, rate_mbps, mtu)
    rate = tc_class.replace("rate 1Gbit", "rate 1000Mbit").replace("rate 10Gbit", "rate 10000Mbit")
    assert f"rate {rate_mbps:g}Mbit" in rate
    assert burst[0] <= bucket_bytes(tc_class, "burst") <= burst[1], tc_class
    assert cburst[0] <= bucket_bytes(tc_class, "cburst") <= cburst[1], tc_class
    assert (fast_link_burst(rate_mbps, mtu) is None) == (rate_mbps <= 80 and (mtu or 1500) < 4000)
    qdiscs = subprocess.run(["tc", "qdisc", "show", "dev", veth], capture_output=True, text=True,
                            check=True).stdout
    assert "htb 5:" in qdiscs and "pfifo 10: parent 5:1 limit 100p" in qdiscs
