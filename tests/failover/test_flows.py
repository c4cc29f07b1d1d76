"""The flow worker on real packets between two namespaces (prefix `fo`): what the receiver
records across an outage is what the loss-window computation needs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.framework.recovery import outcome
from topos.mininet import failures as links

pytestmark = pytest.mark.root
ROOT = Path(__file__).resolve().parents[2]
NS = ("fofl-a", "fofl-b")


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


def _tc(*argv: str) -> None:
    subprocess.run(["ip", "netns", "exec", NS[0], "tc", *argv], check=True, capture_output=True)


@pytest.fixture
def pair():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    for ns in NS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    try:
        for ns in NS:
            _ip("netns", "add", ns)
        _ip("link", "add", "fofla0", "netns", NS[0], "type", "veth", "peer", "name", "foflb0",
            "netns", NS[1])
        for ns, intf, addr in ((NS[0], "fofla0", "10.250.0.1"), (NS[1], "foflb0", "10.250.0.2")):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", intf)
            _ip("-n", ns, "link", "set", intf, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        yield
    finally:
        for ns in NS:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def _start(ns: str, *args: str) -> subprocess.Popen:
    proc = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m",
                             "traffic", "paced", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert json.loads(proc.stdout.readline())["event"] == "ready", proc.stderr.read()
    return proc


def _result(proc: subprocess.Popen) -> dict:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    events = [json.loads(line) for line in out.splitlines()]
    assert events and events[-1]["event"] == "result", err
    return events


def _bins(events: list[dict], flow: str) -> dict[int, int]:
    """Bytes per bin of `flow` ("SRC/QPN") over the receiver's live `bins` reports."""
    bins: dict[int, int] = {}
    for e in events:
        if e["event"] == "bins":
            for i, n in e["flows"].get(flow, []):
                bins[int(i)] = bins.get(int(i), 0) + n
    return bins


def test_an_outage_shows_as_one_lossy_silence_of_its_length(pair):
    # The filter's hook is added before the flow starts: adding (or deleting) a qdisc swaps the
    # interface's transmit queues and drops what is sent meanwhile, a loss of its own.
    _tc("qdisc", "add", "dev", "fofla0", "clsact")
    t0 = time.time()
    rx = _start(NS[1], "recv", "--t0", repr(t0), "--gap", "0.0075")
    tx = _start(NS[0], "send", "--flow", "10.250.0.2:7:50007", "--flow", "10.250.0.2:8:50008",
                "--pps", "200")
    try:
        time.sleep(1.0)  # steady flow before the outage
        # the outage: every frame the sender's port sends is dropped (the link stays up, so the
        # kernel's delayed carrier events play no part)
        fail_lo = time.time()  # the drop starts while the command runs
        _tc("filter", "add", "dev", "fofla0", *links.DROP_FILTER, "bpf", "da", "bytecode",
            links.drop_program(1.0))
        time.sleep(0.3)  # the outage being measured
        restore_lo = time.time()
        _tc("filter", "del", "dev", "fofla0", *links.DROP_FILTER, "bpf")
        restore_hi = time.time()
        time.sleep(1.0)  # steady flow after it
    finally:
        sent = _result(tx)[-1]["flows"]
        time.sleep(0.1)  # the last datagrams land
        events = _result(rx)
        _tc("qdisc", "del", "dev", "fofla0", "clsact")
    records = {f["qpn"]: f for f in events[-1]["flows"]}
    assert sorted(records) == [7, 8]
    assert [e["event"] for e in events[:-1]] and all(e["event"] == "bins" for e in events[:-1])
    bins = _bins(events, "10.250.0.1/7")
    # What the sender sent during the outage is lost, all of it in one silence; how many that
    # were depends on how much CPU the sender got meanwhile (at most the pace allows), and the
    # silence's ends are the kernel's arrival stamps: the first packet after it was sent once
    # the drop was gone, and arrived after that.
    longest = restore_hi - fail_lo  # the outage's upper bound
    for qpn, sent_flow in zip((7, 8), sent, strict=True):
        rec = records[qpn]
        assert rec["packets"] + rec["lost"] == sent_flow["sent"]
        assert 1 <= rec["lost"] <= longest * 200 + 3  # 200 packets/s, paced
        lossy = [g for g in rec["gaps"] if g[2]]
        assert len(lossy) == 1 and lossy[0][2] == rec["lost"], rec["gaps"]
        before, after, _lost = lossy[0]
        assert before < restore_lo <= after, (before, after, restore_lo)
    result = outcome("7", records[7], bins, 0.01, t0, fail_lo)
    assert result.affected
    before, after, _lost = next(g for g in records[7]["gaps"] if g[2])
    assert result.loss_window_s == pytest.approx(after - before, abs=1e-6)  # rounded to µs
    assert result.recovery_s is not None  # back to full throughput before the run ended


@pytest.mark.parametrize("reader", ["c", "python"])
def test_arrivals_are_the_kernels_stamps_not_the_receivers_reads(pair, reader):
    # The receiver is stopped for 300 ms while the flow goes on: the datagrams wait in its
    # socket, and it reads them late. Its record must still show the steady flow they were,
    # not a 300 ms silence followed by a burst.
    t0 = time.time()
    rx = _start(NS[1], "recv", "--t0", repr(t0), "--gap", "0.1", "--reader", reader)
    tx = _start(NS[0], "send", "--flow", "10.250.0.2:9:50009", "--pps", "200", "--size", "1000")
    try:
        time.sleep(0.5)
        stop_at = time.time()
        rx.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        rx.send_signal(signal.SIGCONT)
        time.sleep(0.5)
    finally:
        sent = _result(tx)[-1]["flows"][0]["sent"]
        time.sleep(0.1)
        events = _result(rx)
    (record,) = events[-1]["flows"]
    assert record["packets"] == sent and record["lost"] == 0
    assert not [g for g in record["gaps"] if g[0] < stop_at + 0.3 and g[1] > stop_at], \
        record["gaps"]
    bins = _bins(events, "10.250.0.1/9")
    # the live reports too: the 10 ms bins inside the stop hold what arrived then (200 packets/s
    # of 1000 bytes; at least half of it, for a sender the busy machine holds back)
    stopped = range(int((stop_at - t0) / 0.01) + 1, int((stop_at + 0.3 - t0) / 0.01))
    assert sum(bins.get(i, 0) for i in stopped) >= 0.5 * 200 * 1000 * len(stopped) * 0.01, bins
