"""Packet trimming on a running switch of each target (p4switch, BMv2 simple_switch_grpc): a
burst of one flow's RoCE packets into an uplink queue served slowly. Without trimming the
queue's capacity decides and the rest is dropped; with it every packet arrives, whole or cut to
its headers, marked, at the trim priority, and counted."""

from __future__ import annotations

import select
import shutil
import struct
import time

import pytest

from controller.congestion import CongestionConfig, TrimConfig, apply_congestion
from controller.knobs import knob_values
from controller.queues import run_commands
from mechanisms import trimming
from tests.differential.packets import FLOWS, roce
from tests.differential.rig import LEAF, Rig, rig

pytestmark = [pytest.mark.root, pytest.mark.timeout(300)]

UPLINKS = (2, 3)  # leaf0's ECMP group towards h1n0: the flow takes one of them
BURST = 40
PAYLOAD = 500
DATA_PPS = 2  # each uplink's data queue drains slowly: a burst arrives before it moves much
TRIM_PPS = 1000  # and its trim queue quickly
DATA_CAPACITY = 8  # packets the data queue (priority 0) holds
TRIM_DEPTH = 4
ETH, IPV4, UDP, BTH = 14, 20, 8, 12


def targets() -> list:
    bmv2 = shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss")
    return ["p4switch", pytest.param("bmv2", marks=[pytest.mark.bmv2, pytest.mark.skipif(
        not bmv2, reason="simple_switch_grpc / p4c-bm2-ss not installed")])]


def burst(r: Rig, sport: int) -> list[bytes]:
    """BURST frames of one flow (PSN 0..BURST-1) sent back to back into port 1; every frame the
    uplinks emit until they have been quiet for twice the data queue's service time."""
    r.drain()
    for psn in range(BURST):
        r.socks[1].send(roce(sport, psn=psn, payload=PAYLOAD))
    frames: list[bytes] = []
    last = time.monotonic()
    socks = [r.socks[p] for p in UPLINKS]
    while time.monotonic() - last < 2.0 / DATA_PPS:
        ready, _, _ = select.select(socks, [], [], 0.2)
        for sock in ready:
            while True:
                try:
                    frames.append(sock.recv(65536))
                except BlockingIOError:
                    break
                last = time.monotonic()
    return frames


def psn(frame: bytes) -> int:
    return int.from_bytes(frame[ETH + IPV4 + UDP + 9:ETH + IPV4 + UDP + 12], "big")


def ipv4_checksum_ok(header: bytes) -> bool:
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


@pytest.mark.parametrize("target", targets())
def test_a_burst_is_dropped_without_trimming_and_delivered_trimmed_with_it(target, tmp_path):
    with rig(target, "ecmp", tmp_path, priority_queues=8) as r:
        assert r.ctl is not None
        thrift = r.ctl.spec.switch(LEAF).thrift_port
        commands = []
        for port in UPLINKS:
            commands += [f"set_queue_rate {DATA_PPS} {port} 0",
                         f"set_queue_rate {TRIM_PPS} {port} {trimming.TRIM_PRIORITY}",
                         f"set_queue_depth {DATA_CAPACITY} {port} 0",
                         f"set_queue_depth {BURST} {port} {trimming.TRIM_PRIORITY}"]
        run_commands(target, thrift, commands)

        dropped = burst(r, FLOWS[0])
        assert DATA_CAPACITY <= len(dropped) < BURST, len(dropped)
        assert {len(f) for f in dropped} == {len(roce(FLOWS[0], payload=PAYLOAD))}

        config = CongestionConfig(trim=TrimConfig(depth=TRIM_DEPTH), trim_ports=UPLINKS)
        # the trim DSCP's class, and each uplink's two data classes
        assert apply_congestion(r.ctl, config) == {LEAF: 1 + 2 * len(UPLINKS)}
        before = r.counters().get(trimming.TRIMMED_COUNTER, {})
        assert before == {}
        frames = burst(r, FLOWS[0])
        cut = [f for f in frames if len(f) == ETH + IPV4 + UDP + BTH]
        whole = [f for f in frames if f not in cut]
        assert {len(f) for f in whole} == {len(roce(FLOWS[0], payload=PAYLOAD))}
        assert sorted(psn(f) for f in frames) == list(range(BURST))  # each once: none lost
        # the queue estimate lets TRIM_DEPTH in, plus one per dequeue while the burst arrived
        # (a burst that takes up to 2 s on a busy machine)
        assert TRIM_DEPTH <= len(whole) <= TRIM_DEPTH + 2 * DATA_PPS, len(whole)
        for f in cut:
            ip = f[ETH:ETH + IPV4]
            assert ip[1] >> 2 == trimming.TRIM_DSCP and ip[1] & 3 == 2  # ECN bits kept
            assert int.from_bytes(ip[2:4], "big") == IPV4 + UDP + BTH
            assert ipv4_checksum_ok(ip)
            assert f[ETH + IPV4 + 4:ETH + IPV4 + 8] == (UDP + BTH).to_bytes(2, "big") + b"\0\0"
        counted = r.counters()[trimming.TRIMMED_COUNTER]
        assert sum(v[0] for v in counted.values()) == len(cut)
        assert set(counted) <= set(UPLINKS)

        knob = trimming.MECHANISM.knob("trim")
        assert set(knob_values(r.ctl.clients[LEAF], r.ctl.schema, knob)) == {
            (p, c) for p in UPLINKS for c in (0, 3)}
        apply_congestion(r.ctl, CongestionConfig())  # off again
        assert knob_values(r.ctl.clients[LEAF], r.ctl.schema, knob) == {}
