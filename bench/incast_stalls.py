#!/usr/bin/env python3
"""Benchmark: PFC's headroom against switches that stall, as on a busy machine.

Runs `fabric-lab run incast --quick -p settings=pfc` while every switch of its fabric is stopped
for `--stop` ms of every `--period` ms (SIGSTOP, then SIGCONT), the way a shared machine
deschedules them, and prints per run the congested port's drops and peak queue. A stopped switch
finds what arrived meanwhile waiting in its receive rings and queues it all at once: a stall
longer than the queue above XOFF lasts at the fabric rate overflows it, whatever XOFF says.

    sudo .venv/bin/python bench/incast_stalls.py [--stops 0,30,60] [--period 300] [--runs 2]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from topos.mininet.runstate import load_all  # noqa: E402


def switch_pids(owner: int) -> list[int]:
    """The switches of the fabric process `owner` runs, as its run-state file records them."""
    return [rec.pid for state in load_all() if state.owner.pid == owner
            for rec in state.processes if rec.kind == "switch" and rec.alive()]


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # a switch that has already ended
            os.kill(pid, sig)


def run_once(stop_ms: float, period_ms: float, out: str) -> tuple[dict[str, str], int]:
    """One incast with the stalls; (its summary row, stalls made)."""
    argv = [str(REPO / ".venv" / "bin" / "fabric-lab"), "run", "incast", "--quick",
            "-p", "settings=pfc", "--out", out]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    up = threading.Event()
    output: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            if "fabric up" in line:
                up.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stalls = 0
    try:
        while not up.wait(0.05):
            if proc.poll() is not None:
                break
        pids = switch_pids(proc.pid)
        if stop_ms and not pids and proc.poll() is None:
            raise RuntimeError("incast_stalls: no switch of the incast's fabric in its "
                               "run-state file")
        while stop_ms and proc.poll() is None:
            _signal_all(pids, signal.SIGSTOP)
            time.sleep(stop_ms / 1000)
            _signal_all(pids, signal.SIGCONT)
            stalls += 1
            time.sleep((period_ms - stop_ms) / 1000)
        proc.wait()
    finally:
        if proc.poll() is None:
            _signal_all(switch_pids(proc.pid), signal.SIGCONT)
            proc.terminate()
            proc.wait(10)
        reader.join(5)
    if proc.returncode != 0:
        raise SystemExit(f"incast_stalls: fabric-lab exited {proc.returncode}:\n"
                         + "".join(output[-20:]))
    with open(Path(out) / "summary.csv") as f:
        (row,) = [r for r in csv.DictReader(f) if r["setting"] == "pfc"]
    return row, stalls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stops", default="0,30,60",
                    help="ms each stall lasts, comma-separated (0: none)")
    ap.add_argument("--period", type=float, default=300.0, help="ms from one stall to the next")
    ap.add_argument("--runs", type=int, default=2, help="incasts per stall length")
    args = ap.parse_args()
    errors, stops = [], []
    try:
        stops = [float(s) for s in args.stops.split(",")]
    except ValueError:
        errors.append(f"--stops: numbers of ms, comma-separated, not {args.stops!r}")
    errors += [f"--stops: a stall of {s:g} ms must be 0 or more and shorter than --period "
               f"({args.period:g} ms)" for s in stops if not 0 <= s < args.period]
    if args.runs < 1:
        errors.append("--runs must be at least 1")
    if errors:
        ap.error("; ".join(errors))
    if os.geteuid() != 0:
        sys.exit("incast_stalls: needs root (Mininet)")
    print(f"{'stall':>8} {'every':>8} {'run':>4} {'stalls':>7} {'drops':>6} {'peak queue':>11} "
          f"{'complete':>9} {'seconds':>8}")
    with tempfile.TemporaryDirectory(prefix="incast-stalls-") as tmp:
        for stop in stops:
            for run in range(1, args.runs + 1):
                row, stalls = run_once(stop, args.period, f"{tmp}/{stop:g}-{run}")
                print(f"{stop:>6g}ms {args.period:>6g}ms {run:>4} {stalls:>7} "
                      f"{row['drops_congested']:>6} {row['peak_queue_congested']:>11} "
                      f"{row['messages_complete'] + '/' + row['senders']:>9} "
                      f"{float(row['completion_s']):>8.2f}")


if __name__ == "__main__":
    main()
