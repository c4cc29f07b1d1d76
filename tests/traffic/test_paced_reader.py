"""`python -m traffic paced recv`'s two readers, C (traffic/c/paced_recv.c) and Python: the same
records for the same arrivals (losses, late and duplicate packets, skips past MAX_HOLES,
silences, stamps that step back), the same reports on a real socket, and a clear refusal of
`--reader c` where no C compiler is found (`auto` then reads in Python)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4switch.native import NativeUnavailable
from traffic.paced_recv import MAX_HOLES, CFlows, PythonFlows

ROOT = Path(__file__).resolve().parents[2]
T0, BIN_S, GAP_S = 1_700_000_000.0, 0.01, 0.005


def c_flows() -> CFlows:
    try:
        return CFlows(T0, BIN_S, GAP_S)
    except NativeUnavailable as e:
        pytest.skip(f"no C receive loop here: {e}")


def arrivals(seed: int, n: int = 3000) -> list[tuple[str, int, int, int, float]]:
    """(src, qpn, psn, size, now) of four flows, with what a fabric does to them."""
    rng = random.Random(seed)
    keys = [("10.0.0.1", 5), ("10.0.0.2", 5), ("10.0.0.1", 9), ("10.0.1.7", 0xFFFFFF)]
    next_psn = dict.fromkeys(keys, rng.randrange(0, 4))  # some start past 0
    held: list[tuple[str, int, int]] = []  # reordered: sent later
    now = T0 + rng.uniform(0, 1)
    out = []
    for _ in range(n):
        key = rng.choice(keys)
        roll = rng.random()
        if roll < 0.03:  # a silence, lossy or not
            now += rng.uniform(GAP_S, 0.05)
        if roll < 0.01:
            next_psn[key] += rng.randrange(1, 30)  # lost
        elif roll < 0.012:
            next_psn[key] += MAX_HOLES + rng.randrange(1, 3)  # too many to remember
        psn = next_psn[key]
        next_psn[key] += 1
        if rng.random() < 0.05:
            held.append((*key, psn))
            continue
        if held and rng.random() < 0.3:
            src, qpn, psn = held.pop(rng.randrange(len(held)))
            key = (src, qpn)
        if rng.random() < 0.01:
            psn = max(0, psn - rng.randrange(1, 5))  # a duplicate, or a late one
        step = rng.expovariate(1 / 0.0004)
        if rng.random() < 0.005:
            step = -rng.uniform(0, 0.03)  # a stamp before the one before (back a bin or more)
        now += step
        out.append((*key, psn, rng.choice((24, 256, 1000, 4096)), now))
    return out


def records(flows: PythonFlows | CFlows, done: int) -> list[dict]:
    out = []
    for i, summary in enumerate(flows.summaries()):
        first = flows.first_bin(i)
        out.append({**summary, "key": flows.key(i), "first_bin": first,
                    "bins": flows.bin_bytes(i, first - 3, done),
                    "later_gaps": flows.gaps_from(i, 2)})
    return out


@pytest.mark.parametrize("seed", range(6))
def test_c_keeps_the_same_records_as_python(seed):
    seq = arrivals(seed)
    done = int((max(t for *_, t in seq) - T0) / BIN_S) + 2
    reference = PythonFlows(T0, BIN_S, GAP_S)
    with c_flows() as native:
        for src, qpn, psn, size, now in seq:
            reference.arrive(src, qpn, psn, size, now)
            native.arrive(src, qpn, psn, size, now)
        got = records(native, done)
    want = records(reference, done)
    assert got == want
    # the sequence exercised what it is for
    assert any(g[2] for r in want for g in r["gaps"])  # silences that lost packets
    assert any(r["lost"] >= MAX_HOLES for r in want)
    assert sum(r["packets"] for r in want) == len(seq)


def test_a_late_packet_fills_its_silence_in_either():
    for flows in (PythonFlows(T0, BIN_S, GAP_S), c_flows()):
        with flows:
            for psn, dt in [(0, 0.0), (1, 0.0025), (4, 0.0105), (2, 0.011), (3, 0.0112),
                            (7, 0.020), (5, 0.021)]:
                flows.arrive("10.0.0.1", 7, psn, 100, T0 + dt)
            (summary,) = flows.summaries()
        assert summary["lost"] == 1, type(flows).__name__  # 6 never came
        assert summary["gaps"] == [(T0 + 0.0025, T0 + 0.0105, 0), (T0 + 0.0112, T0 + 0.020, 1)]


# ---- on a socket -------------------------------------------------------------------------
# Sent from inside the namespace: flow 5 whole; flow 6 loses PSNs 100-109, and PSN 120 comes
# after 150; a datagram that is not ours after each round.
SEND = """
import socket, time
from traffic.paced import encode
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", 50105))
for psn in range(300):
    for qpn in (5, 6):
        if qpn == 6 and (100 <= psn < 110 or psn == 120):
            continue
        sock.sendto(encode(qpn, psn, 500, time.time_ns()), ("127.0.0.1", 4791))
    if psn == 150:
        sock.sendto(encode(6, 120, 500, time.time_ns()), ("127.0.0.1", 4791))
    sock.sendto(b"not ours", ("127.0.0.1", 4791))
    time.sleep(0.0005)
"""


def in_ns(ns: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", ns, sys.executable, *argv]


def start_receiver(ns: str, reader: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(in_ns(ns, "-m", "traffic", "paced", "recv", "--t0",
                                  repr(time.time()), "--reader", reader, "--report", "0.05"),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    assert line and json.loads(line)["event"] == "ready", proc.stderr.read()
    return proc


def stop(proc: subprocess.Popen) -> list[dict]:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.root
@pytest.mark.parametrize("reader", ["c", "python"])
def test_both_readers_report_the_same_on_a_socket(loopback_ns, reader):
    rx = start_receiver(loopback_ns, reader)
    try:
        subprocess.run(in_ns(loopback_ns, "-c", SEND), cwd=ROOT, check=True, timeout=60)
        time.sleep(0.2)  # the last report's silence has settled
    finally:
        events = stop(rx)
    assert events[-1]["event"] == "result"
    flows = {f["qpn"]: f for f in events[-1]["flows"]}
    assert set(flows) == {5, 6}
    assert flows[5]["packets"] == 300 and flows[5]["lost"] == 0
    assert flows[6]["packets"] == 290 and flows[6]["lost"] == 10
    assert flows[6]["bytes"] == 290 * 500 and flows[5]["src"] == "127.0.0.1"
    lossy = [g for g in flows[6]["gaps"] if g[2]]
    assert len(lossy) == 1 and lossy[0][2] == 10
    live = [g for e in events if e["event"] == "bins"
            for g in e["lossy_gaps"].get("127.0.0.1/6", [])]
    assert live == [lossy[0]]  # reported live once, after it settled
    binned = sum(n for e in events if e["event"] == "bins"
                 for _, n in e["flows"].get("127.0.0.1/5", []))
    assert 0.9 * 300 * 500 <= binned <= 300 * 500  # the bin in progress at the end is not
    assert flows[5]["first_t"] <= flows[5]["last_t"]


@pytest.mark.root
def test_without_a_compiler_c_is_refused_and_auto_reads_in_python(loopback_ns):
    env = {**os.environ, "CC": "/nonexistent/cc"}
    proc = subprocess.run(in_ns(loopback_ns, "-m", "traffic", "paced", "recv", "--reader", "c"),
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode != 0
    assert "the C receive loop cannot be built here" in proc.stderr
    assert "no C compiler" in proc.stderr
    rx = start_receiver(loopback_ns, "auto", env)
    try:
        subprocess.run(in_ns(loopback_ns, "-c", SEND), cwd=ROOT, check=True, timeout=60)
    finally:
        time.sleep(0.1)
        events = stop(rx)
    flows = {f["qpn"]: f for f in events[-1]["flows"]}
    assert flows[5]["packets"] == 300 and flows[6]["lost"] == 10
