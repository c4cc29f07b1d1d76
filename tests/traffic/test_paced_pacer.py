"""`python -m traffic paced send`'s two pacing loops, C (traffic/c/paced_send.c) and Python, on
a namespace's loopback: the same datagrams byte for byte (traffic.paced.encode of each one's
PSN and send stamp), PSNs in order from 0, the same number at the same pace, and a clear
refusal of `--pacer c` where no C compiler is found (`auto` then paces in Python)."""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from traffic.paced import decode, encode

pytestmark = pytest.mark.root
ROOT = Path(__file__).resolve().parents[2]
PPS, SECONDS, SIZE = 400.0, 1.0, 300
FLOWS = ("127.0.0.1:5:50105", "127.0.0.1:6:50106")
# datagrams to 127.0.0.1:4791 in the namespace until a second of silence, then printed as
# (hex, arrival) JSON lines
CAPTURE = """
import json, socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("127.0.0.1", 4791))
print("ready", flush=True)
s.settimeout(1.0)
got = []
try:
    while True:
        got.append((s.recv(65536).hex(), time.time()))
except TimeoutError:
    pass
print("\\n".join(json.dumps(g) for g in got))
"""


def paced(ns: str, pacer: str, env: dict[str, str] | None = None):
    """(datagrams received as (bytes, arrival), the sender's result, its exit status, stderr)."""
    cap = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", CAPTURE],
                           stdout=subprocess.PIPE, text=True)
    assert cap.stdout is not None and cap.stdout.readline().strip() == "ready"
    flows = [arg for flow in FLOWS for arg in ("--flow", flow)]
    tx = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "traffic", "paced",
                         "send", *flows, "--pps", str(PPS), "--size", str(SIZE), "--duration",
                         str(SECONDS), "--pacer", pacer], cwd=ROOT, capture_output=True,
                        text=True, timeout=60, env=env)
    out, _ = cap.communicate(timeout=30)
    got = [(bytes.fromhex(h), t) for h, t in map(json.loads, filter(None, out.splitlines()))]
    events = [json.loads(line) for line in tx.stdout.splitlines() if line]
    return got, events, tx.returncode, tx.stderr


@pytest.mark.parametrize("pacer", ["c", "python"])
def test_both_pacers_send_the_same_datagrams_at_the_same_pace(loopback_ns, pacer):
    start_ns = time.time_ns()
    got, events, status, err = paced(loopback_ns, pacer)
    assert status == 0, err
    assert [e["event"] for e in events] == ["ready", "result"]
    result = {f["qpn"]: f for f in events[-1]["flows"]}
    by_flow: dict[int, list[tuple[int, int, float]]] = {5: [], 6: []}
    for data, arrival in got:
        qpn, psn, stamp = decode(data) or (None, None, None)
        assert qpn in by_flow
        assert data == encode(qpn, psn, SIZE, stamp)  # byte for byte what Python would send
        assert start_ns < stamp < time.time_ns()
        by_flow[qpn].append((psn, stamp, arrival))
    for qpn, records in by_flow.items():
        assert [psn for psn, _, _ in records] == list(range(len(records)))
        assert result[qpn]["sent"] == len(records) and result[qpn]["send_errors"] == 0
        # never faster than the pace; a sender kept off the CPU for more than 2 ms skips what
        # it missed (both loops), so a busy machine costs some (the median gap is the pace)
        assert 0.5 * PPS * SECONDS <= len(records) <= PPS * SECONDS + 2
        gaps = [(b - a) / 1e9 for (_, a, _), (_, b, _) in itertools.pairwise(records)]
        assert statistics.median(gaps) == pytest.approx(1 / PPS, rel=0.1)


def test_without_a_compiler_c_is_refused_and_auto_paces_in_python(loopback_ns):
    env = {**os.environ, "CC": "/nonexistent/cc"}
    _, events, status, err = paced(loopback_ns, "c", env)
    assert status != 0 and "the C pacer cannot be built here" in err and "no C compiler" in err
    got, events, status, err = paced(loopback_ns, "auto", env)
    assert status == 0, err
    assert sum(f["sent"] for f in events[-1]["flows"]) == len(got) >= 2 * 0.5 * PPS * SECONDS
