"""Queue-aware DLB on a running switch of each target (p4switch, BMv2 simple_switch_grpc):
one uplink's egress queue is served slowly, a burst of one flow's packets goes in, and the
switch must steer the burst to the fast uplink; with queue awareness off it splits evenly."""

from __future__ import annotations

import select
import shutil
import time
from collections import Counter

import pytest

from controller.queues import run_commands
from tests.differential.packets import FLOWS, roce
from tests.differential.rig import LEAF, rig

pytestmark = [pytest.mark.root, pytest.mark.timeout(300)]

SLOW, FAST = 2, 3  # leaf0's two uplinks (the ECMP group towards h1n0)
BURST = 80


def targets() -> list:
    bmv2 = shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss")
    return ["p4switch", pytest.param("bmv2", marks=[pytest.mark.bmv2, pytest.mark.skipif(
        not bmv2, reason="simple_switch_grpc / p4c-bm2-ss not installed")])]


def burst_ports(r, sport: int, rate_pps: float) -> Counter:
    """Send BURST frames of one flow into port 1 at `rate_pps`; count where they leave."""
    r.drain()
    for psn in range(BURST):
        r.socks[1].send(roce(sport, psn=psn, payload=512))
        time.sleep(1 / rate_pps)  # pacing of the offered load, not a wait for readiness
    seen: Counter = Counter()
    deadline = time.monotonic() + 15
    while sum(seen.values()) < BURST and time.monotonic() < deadline:
        ready, _, _ = select.select([r.socks[SLOW], r.socks[FAST]], [], [], 0.2)
        for sock in ready:
            port = SLOW if sock is r.socks[SLOW] else FAST
            while True:
                try:
                    sock.recv(65536)
                except BlockingIOError:
                    break
                seen[port] += 1
    return seen


@pytest.mark.parametrize("target", targets())
def test_a_slow_uplink_gets_little_of_a_burst(target, tmp_path):
    with rig(target, "qdlb", tmp_path) as r:
        thrift = r.ctl.spec.switch(LEAF).thrift_port
        run_commands(target, thrift, [f"set_queue_rate 10 {SLOW}", f"set_queue_rate 2000 {FAST}",
                                      f"set_queue_depth 200 {SLOW}", f"set_queue_depth 200 {FAST}"])
        aware = burst_ports(r, FLOWS[0], rate_pps=100)
        assert sum(aware.values()) == BURST, aware
        assert aware[SLOW] < 0.25 * BURST, f"{target}: queue-aware sent {aware[SLOW]} to the slow port"
        r.lb.configure(queue_aware=False)
        assert r.lb.queue_aware() == {LEAF: False}
        time.sleep(BURST / 10 + 1)  # let the slow queue drain what the first burst left there
        blind = burst_ports(r, FLOWS[1], rate_pps=100)
        assert sum(blind.values()) == BURST, blind
        assert abs(blind[SLOW] - blind[FAST]) <= 2, f"{target}: round robin split {blind}"
