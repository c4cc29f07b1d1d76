"""Bring-up time per fabric, by stage, and the idle CPU use of the running fabric.

    sudo .venv/bin/python bench/fabric_bringup.py \
        [--target both|p4switch|bmv2] [--idle 5] [FABRIC ...]

Per fabric and target (default: p4switch and BMv2, side by side): Mininet with hosts and links
only (no switch processes), then the full network (switch processes started and probed until
their gRPC port accepts), controller connect, and pipeline + routes; then the CPU the switch
processes use while the fabric idles, in % of one core.
Targets: HPN 7.0 at its default scale up and routed in under 5 s; p4switch no slower than BMv2.
The p4switch processes load the program the controller compiled from the compile cache
(`p4switch.compile_cache.CompileCache`, $P4SWITCH_CACHE_DIR).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.fabric import FabricController
from controller.pipeline import build_pipeline
from mechanisms import program_path
from targets import CHOICES, TARGETS, get_target
from topos import FABRICS, build_fabric
from topos.mininet import FabricNetwork

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = program_path("ecmp")
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pss_mb(pid: int) -> float:
    """Proportional set size: pages shared with other processes (a forked switch shares its
    parent's) counted by share, so the fabric's total is what it really takes."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed(fn):
    started = time.monotonic()
    result = fn()
    return result, time.monotonic() - started


def up_command_total(spec_json: str, target: str) -> float:
    """The `total` line of `fabric-lab up FILE --run true` (compile overlapped with start)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as model:
        model.write(spec_json)
        model.flush()
        done = subprocess.run([sys.executable, "-m", "fabric_lab.cli", "up", model.name,
                               "--target", target, "--run", "true"], cwd=ROOT,
                              capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.strip().startswith("total"):
            return float(line.split()[1])
    raise RuntimeError(f"fabric-lab up failed:\n{done.stdout}{done.stderr}")


def bench(fabric: str, target_name: str, idle: float, pipelines: dict,
          prefix: str = "") -> dict[str, float]:
    spec = build_fabric(fabric)
    if prefix:  # own names and management ports, beside other running fabrics
        from tests.controller.fabrics import prefixed
        spec = prefixed(spec, prefix)
    target = get_target(target_name).ensure_available()
    if target.name not in pipelines:
        pipelines[target.name], pipelines["compile"] = timed(
            lambda: build_pipeline(PROGRAM, target))
    pipeline = pipelines[target.name]
    figures = {"switches": len(spec.switches), "nics": len(spec.host_nics())}

    bare = FabricNetwork(spec, None)
    try:
        _, figures["mininet"] = timed(bare.start)
    finally:
        bare.stop()

    net = FabricNetwork(spec, target)
    ctl = FabricController(spec, pipeline)
    try:
        _, figures["ready"] = timed(net.start)
        _, figures["connect"] = timed(ctl.connect)
        reports, figures["routes"] = timed(ctl.program)
        figures["up"] = figures["ready"] + figures["connect"] + figures["routes"]
        figures["writes"] = sum(r.writes for r in reports)
        pids = [net.switch(sw.name).proc.pid for sw in spec.switches]
        before = sum(cpu_seconds(p) for p in pids) + time.process_time()
        time.sleep(idle)  # measuring idle use: the fabric must be left alone for a while
        after = sum(cpu_seconds(p) for p in pids) + time.process_time()
        figures["idle_cpu_pct"] = 100 * (after - before) / idle
        rss = [rss_mb(p) for p in pids]  # after routes and a little traffic-free running
        figures["rss_mb"], figures["rss_max_mb"] = sum(rss), max(rss)
        figures["pss_mb"] = sum(pss_mb(p) for p in pids)
    finally:
        ctl.close()
        net.stop()
    figures["up_cmd"] = up_command_total(spec.to_json(), target.name)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fabrics", nargs="*", metavar="FABRIC",
                        help=f"fabrics to bring up (default: all of {', '.join(FABRICS)})")
    parser.add_argument("--target", dest="selection", default="both", choices=("both", *CHOICES),
                        help="both (default): every fabric on p4switch, then on BMv2")
    parser.add_argument("--idle", type=float, default=5.0, help="idle CPU window, seconds")
    parser.add_argument("--prefix", default="",
                        help="prefix node/interface names and move gRPC/CLI ports (e.g. ct) to "
                             "run beside another fabric")
    args = parser.parse_args()
    unknown = sorted(set(args.fabrics) - set(FABRICS))
    if unknown:
        parser.error(f"unknown fabric(s) {', '.join(unknown)}; choose from {', '.join(FABRICS)}")
    fabrics = args.fabrics or list(FABRICS)
    if os.geteuid() != 0:
        print("fabric_bringup: needs root (Mininet)", file=sys.stderr)
        return 2
    targets = list(TARGETS) if args.selection == "both" else [get_target(args.selection).name]
    pipelines: dict = {}
    compile_s: dict[str, float] = {}
    rows: list[tuple[str, str, dict[str, float] | None]] = []
    for target in targets:
        if not TARGETS[target].available():
            rows += [(fabric, target, None) for fabric in fabrics]
            continue
        for fabric in fabrics:
            rows.append((fabric, target, bench(fabric, target, args.idle, pipelines, args.prefix)))
            compile_s.setdefault(target, pipelines["compile"])
    print("P4 compile (once per target): "
          + ", ".join(f"{t} {s:.2f} s" for t, s in compile_s.items()))
    print(f"{'fabric':<11}{'target':<10}{'sw':>4}{'NICs':>5}{'mininet':>9}{'ready':>8}"
          f"{'connect':>9}{'routes':>8}{'UP':>7}{'writes':>8}{'idle CPU':>10}{'up cmd':>8}"
          f"{'RSS MB':>14}{'PSS MB':>8}")
    for fabric, target, f in rows:
        if f is None:
            print(f"{fabric:<11}{target:<10}  not installed")
            continue
        print(f"{fabric:<11}{target:<10}{f['switches']:>4}{f['nics']:>5}{f['mininet']:>8.2f}s"
              f"{f['ready']:>7.2f}s{f['connect']:>8.2f}s{f['routes']:>7.2f}s{f['up']:>6.2f}s"
              f"{f['writes']:>8}{f['idle_cpu_pct']:>9.1f}%{f['up_cmd']:>7.2f}s"
              f"{f['rss_mb']:>7.0f} ({f['rss_max_mb']:.0f}){f['pss_mb']:>8.0f}")
    done = {(fabric, target): f for fabric, target, f in rows if f is not None}
    if len(targets) == 2:
        print("p4switch / BMv2, UP and up cmd:")
        for fabric in fabrics:
            a, b = done.get((fabric, "p4switch")), done.get((fabric, "bmv2"))
            if a and b:
                print(f"  {fabric:<11}{a['up'] / b['up']:>6.2f}{a['up_cmd'] / b['up_cmd']:>8.2f}")
            else:
                print(f"  {fabric:<11}  BMv2 not installed")
    print("mininet = hosts+links only; ready = full network with switches answering gRPC; "
          "UP = ready + connect + routes (target for hpn7: < 5 s); idle CPU = switch processes "
          "+ controller, % of one core; up cmd = `fabric-lab up --run true` total, compile "
          "included (overlapped with the start); RSS = all switch processes (largest one); PSS = "
          "their proportional set size (shared pages counted once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
