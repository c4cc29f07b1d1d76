#!/usr/bin/env python3
"""Where a p4switch's CPU goes under a flood, per forwarded packet.

The harness of bench/switch_pps.py: two host namespaces on veth pairs, the switch between them
routing through the ECMP selector, a Python flood sender for `--seconds`. It reports the switch
process's user and kernel CPU per forwarded packet (/proc/<pid>/stat), and, where py-spy is
installed (`.venv/bin/pip install py-spy`), its samples of the switch's data-plane (main)
thread grouped by the part of p4switch the innermost Python frame is in. A system call counts
towards the frame that made it, so the port I/O part includes the kernel's veth transmit to the
next namespace. The other threads (gRPC, runtime CLI) wait under a flood; py-spy cannot tell
all their waits from work, so they are left out. On the native pipeline (`--pipeline native`,
the default, built first) py-spy also samples native frames (`--native`), and the native
module's functions count as the generated pipeline.

    sudo .venv/bin/python bench/switch_profile.py [--program ecmp] [--size 64] [--seconds 8]
        [--pipeline native|python]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from switch_pps import (  # noqa: E402
    cpu_split,
    native_missing,
    program_route,
    start_switch,
    stop,
)
from switch_pps_io import Bench, drain, run_traffic  # noqa: E402

# (part, pattern on the innermost frame's file), first match wins
PARTS = (
    ("generated pipeline (parser, controls, deparser)", re.compile(r"<p4switch:|_p4native_")),
    ("engine (v1model driver)", re.compile(r"p4switch/engine\.py")),
    ("tables, selectors, hashes, externs", re.compile(r"p4switch/(runtime|externs|backend)/")),
    ("traffic manager", re.compile(r"p4switch/switch/(tm|pfc)\.py")),
    ("port I/O and rings (system calls included)", re.compile(r"p4switch/switch/(ports|rings)"
                                                               r"\.py")),
    ("data-plane loop and clock", re.compile(r"p4switch/switch/(dataplane|device)\.py")),
)
HELPER_THREAD = "Thread._bootstrap"  # the root frame of every thread but the main one
FRAME_FILE = re.compile(r"\(([^():]+):\d+\)$")


def part_of(stack: str) -> str:
    """The part of the innermost Python frame, or of the native pipeline's function; C frames
    of the interpreter and libraries (py-spy --native) count towards the frame calling them."""
    for frame in reversed(stack.split(";")):
        found = FRAME_FILE.search(frame)
        where = found.group(1) if found else frame
        if not (where.endswith(".py") or where.startswith("<") or "_p4native_" in frame):
            continue  # a C frame below the Python frame (or native function) that called it
        for part, pattern in PARTS:
            if pattern.search(frame):
                return part
        return "other (Python runtime)"
    return "other (Python runtime)"


def py_spy() -> str | None:
    """py-spy on PATH or beside this Python (the venv's), if installed."""
    beside = Path(sys.executable).with_name("py-spy")
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default="ecmp")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--pipeline", default="native", choices=("native", "python"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("switch_profile: needs root (namespaces, raw sockets)", file=sys.stderr)
        return 1
    from controller.pipeline import build_pipeline
    from mechanisms import program_path

    if args.pipeline == "native" and native_missing(args.program):
        return 1
    spy = py_spy()
    bench = Bench()
    try:
        p1, p2 = bench.setup()
        tx, rx = bench.ns
        with tempfile.TemporaryDirectory() as tmp:
            proc, addr, _ = start_switch("p4switch", {1: p1, 2: p2}, Path(tmp) / "switch.log",
                                         ("--pipeline", args.pipeline))
            try:
                program_route(addr, build_pipeline(program_path(args.program), "p4switch"))
                run_traffic(tx, rx, 0, 1.0, args.size)  # warm-up
                drain(rx)
                samples = Path(tmp) / "samples.txt"
                recorder = None
                if spy is not None:
                    recorder = subprocess.Popen(
                        [spy, "record", "--pid", str(proc.pid), "--rate", "200",
                         "--duration", str(max(1, int(args.seconds) - 1)),
                         "--format", "raw", "--output", str(samples),
                         *(["--native"] if args.pipeline == "native" else [])],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                user0, kernel0 = cpu_split(proc.pid)
                sent, _, got, _, _, _ = run_traffic(tx, rx, 0, args.seconds, args.size)
                user1, kernel1 = cpu_split(proc.pid)
                if recorder is not None:
                    recorder.wait(timeout=60)
            finally:
                stop(proc)
            print(f"p4switch ({args.pipeline} pipeline), {args.program}.p4, {args.size}-byte "
                  f"frames, {args.seconds:.0f} s "
                  f"flood: {sent} sent, {got} forwarded")
            if got:
                user, kernel = (user1 - user0) / got * 1e6, (kernel1 - kernel0) / got * 1e6
                print(f"  CPU per forwarded packet: {user + kernel:.1f} µs = user {user:.1f} "
                      f"+ kernel {kernel:.1f}")
            if spy is None:
                print("  py-spy is not installed (.venv/bin/pip install py-spy): no breakdown")
                return 0
            by_part: Counter[str] = Counter()
            for line in samples.read_text().splitlines() if samples.exists() else ():
                stack, _, count = line.rpartition(" ")
                if not stack.startswith(HELPER_THREAD):
                    by_part[part_of(stack)] += int(count)
            total = sum(by_part.values())
            if not total:
                print("  py-spy recorded no samples of the data-plane thread")
                return 1
            print(f"  py-spy, {total} samples of the data-plane thread:")
            for part, count in by_part.most_common():
                print(f"    {100 * count / total:5.1f} %  {part}")
    finally:
        bench.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
