"""Link shaping on a real veth pair: a fast link's HTB class may send 100 µs of its rate back to
back (its ceil burst), a slow one keeps tc's one-frame default; the queue sits under the class."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from topos.mininet.shaping import ceil_burst, run_tc_batch, tc_batch
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


def shaped_class(intf: str, rate_mbps: float) -> str:
    link = Link(Endpoint("a", 1, intf), Endpoint("b", 1, PAIR[1]), rate_mbps=rate_mbps,
                queue_pkts=100)
    run_tc_batch(tc_batch(intf, link, netem=False))
    return subprocess.run(["tc", "-d", "class", "show", "dev", intf], capture_output=True,
                          text=True, check=True).stdout


def cburst_bytes(tc_class: str) -> int:
    match = re.search(r"cburst (\d+)(b|Kb)", tc_class)
    assert match, tc_class
    return int(match[1]) * (1024 if match[2] == "Kb" else 1)


@pytest.mark.parametrize(("rate_mbps", "low", "high"),
                         [(1000.0, 12_000, 13_000), (40.0, 1, 1600), (128.0, 1, 1600)])
def test_the_ceil_burst_is_100_us_of_the_rate_or_one_frame(veth, rate_mbps, low, high):
    tc_class = shaped_class(veth, rate_mbps)
    assert f"rate {rate_mbps:g}Mbit" in tc_class.replace("rate 1Gbit", "rate 1000Mbit")
    assert low <= cburst_bytes(tc_class) <= high
    assert (ceil_burst(rate_mbps) is None) == (high <= 1600)
    qdiscs = subprocess.run(["tc", "qdisc", "show", "dev", veth], capture_output=True, text=True,
                            check=True).stdout
    assert "htb 5:" in qdiscs and "pfifo 10: parent 5:1 limit 100p" in qdiscs
