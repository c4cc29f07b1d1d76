"""CPU per datagram of the paced traffic workers (`python -m traffic paced send` and `recv`, the
flows of failover, the demo and bench/fabric_capacity.py), on the loopback interface.

    .venv/bin/python bench/paced_worker_cpu.py [--flows 7] [--pps 200,1000] [--seconds 5]
        [--size 1000] [--rounds 3] [--pacers c,python] [--readers c,python]

One receiver and one sender of `--flows` flows at each `--pps` (per flow), as one NIC of the
fabric capacity bench sends (7 flows on leafspine); the sender with each of its pacing loops
(`--pacer c`, traffic/c/paced_send.c, and `--pacer python`) and the receiver with each of its
readers (`--reader c`, traffic/c/paced_recv.c, and `--reader python`), every pair in turn.
Each worker's CPU is read from /proc/<pid>/schedstat (time on a CPU, ns) between its "ready"
line and the end of the window, and from /proc/<pid>/stat its user share; the figure printed
is CPU µs per datagram, the best of `--rounds`. Every datagram sent must arrive (the
receiver's result), or the run fails. No root needed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from switch_pps import cpu_split  # noqa: E402  (bench/switch_pps.py)


def on_cpu_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def start(argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "traffic", "paced", *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if json.loads(line or "{}").get("event") != "ready":
        proc.kill()
        raise SystemExit(f"paced {argv[0]} did not start: {line!r}")
    return proc


def result(proc: subprocess.Popen) -> dict:
    """The worker's final `result` event, after SIGTERM."""
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    for line in reversed(out.splitlines()):
        event = json.loads(line)
        if event.get("event") == "result":
            return event
    raise SystemExit("a paced worker ended without a result")


def run(flows: int, pps: float, seconds: float, size: int, pacer: str,
        reader: str) -> dict[str, float]:
    """(role -> CPU µs per datagram, and user share) of one window."""
    rx = start(["recv", "--reader", reader])
    tx = None
    try:
        argv = ["send", "--pps", f"{pps:g}", "--size", str(size), "--pacer", pacer]
        for i in range(flows):
            argv += ["--flow", f"127.0.0.1:{i + 1}:{50000 + i}"]
        tx = start(argv)
        pids = {"send": tx.pid, "recv": rx.pid}
        before = {pid: (on_cpu_ns(pid), cpu_split(pid)) for pid in pids.values()}
        time.sleep(seconds)
        after = {pid: (on_cpu_ns(pid), cpu_split(pid)) for pid in pids.values()}
        sent = sum(f["sent"] for f in result(tx)["flows"])
        tx = None
        time.sleep(0.2)  # the last datagrams reach the receiver
        received = sum(f["packets"] for f in result(rx)["flows"])
    finally:
        for proc in (tx, rx):
            if proc is not None and proc.poll() is None:
                proc.kill()
    if received != sent:
        raise SystemExit(f"{sent - received} of {sent} datagrams lost at {pps:g} pps per flow")
    datagrams = flows * pps * seconds
    out: dict[str, float] = {}
    for role, pid in pids.items():
        (ns0, (u0, s0)), (ns1, (u1, s1)) = before[pid], after[pid]
        out[role] = (ns1 - ns0) / 1000 / datagrams
        spent = (u1 - u0) + (s1 - s0)
        out[role + "_user"] = (u1 - u0) / spent if spent else 0.0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=7)
    ap.add_argument("--pps", default="200,1000", help="datagrams/s per flow, comma-separated")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pacers", default="c,python",
                    help="the sender's pacing loops to measure (traffic/c/paced_send.c: c)")
    ap.add_argument("--readers", default="c,python",
                    help="the receiver's readers to measure (traffic/c/paced_recv.c: c)")
    args = ap.parse_args()
    pacers = [p for p in args.pacers.split(",") if p]
    readers = [r for r in args.readers.split(",") if r]
    for flag, chosen in (("--pacers", pacers), ("--readers", readers)):
        if not chosen or set(chosen) - {"c", "python"}:
            ap.error(f"{flag}: c, python or both, got {','.join(chosen)!r}")
    try:
        rates = [float(r) for r in args.pps.split(",") if r]
    except ValueError:
        ap.error("--pps: comma-separated numbers")
    if not rates or min(rates) <= 0 or args.flows < 1 or args.rounds < 1 or args.seconds <= 0:
        ap.error("--pps, --flows, --rounds and --seconds must be positive")
    print(f"paced workers on loopback: {args.flows} flows, {args.size}-byte datagrams, "
          f"{args.seconds:g} s windows, best of {args.rounds}; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'pps/flow':>9} {'pacer':>7} {'reader':>7} {'send µs/dgram':>14} {'user':>5} "
          f"{'recv µs/dgram':>14} {'user':>5}")
    pairs = [(p, r) for p in pacers for r in readers]
    for pps in rates:
        by_pair: dict[tuple[str, str], list[dict[str, float]]] = {pair: [] for pair in pairs}
        for _ in range(args.rounds):  # the pairs alternate, so a slow moment hits all
            for pacer, reader in pairs:
                by_pair[(pacer, reader)].append(
                    run(args.flows, pps, args.seconds, args.size, pacer, reader))
        for (pacer, reader), rounds in by_pair.items():
            send = min(rounds, key=lambda r: r["send"])
            recv = min(rounds, key=lambda r: r["recv"])
            print(f"{pps:9g} {pacer:>7} {reader:>7} {send['send']:14.1f} "
                  f"{send['send_user']:5.0%} {recv['recv']:14.1f} {recv['recv_user']:5.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
