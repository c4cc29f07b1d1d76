"""`fabric-lab perf` against the alpha-beta bound: the commands docs/jobs/perf.md quotes, run as
a user runs them, their nccl-tests output parsed.

Cases (16 GPUs unless named): ring all-reduce on a non-blocking leaf-spine (>= 85% of its
bound), the same at half the link rate (the same modelled busbw within 10%), at 8 bytes (the
time is alpha x the dataflow's depth within 20%), chain broadcast (busbw >= 80% of the NIC
rate modelled), hierarchical all-reduce on dual-plane HPN 7.0 (>= 80% of its bound, plane B
40-60% of the fabric's bytes; at 100 and at 10 Mb/s per port), and, reported only, AIPod's
and BiGraph's default shapes. For each: the command, time and busbw (modelled: a NIC stands
for 400 Gb/s), the bound, the bound's share of the time, how busy the machine was, and the
target met or not.

    bench/jobs_busbw.py [--quick] [--targets p4switch,bmv2] [--cases leafspine-ring,hpn7-hier]

Every case runs on each target in turn (BMv2's rows beside p4switch's; a target that is not
installed is skipped, said so). BMv2 forwards about a tenth of p4switch's packets per second
(docs/rates.md): its rows run the same commands at a tenth of the link rate
(`--link-mbps` 10 for 100), where its switches keep up; modelled figures are comparable across
rates, as the leafspine-ring-50 case checks. The exit status is 1 when a figure misses its mark.

Needs root (Mininet).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import targets
from jobs.scale import MODELLED_GBPS

LEAFSPINE16 = ["--fabric", "leafspine", "--scale", "leaves=4", "spines=4", "hosts_per_leaf=4"]
HPN16 = ["--fabric", "hpn7", "--scale", "segments=2", "servers_per_segment=2",
         "nics_per_server=4"]


@dataclass
class Row:
    size: int
    time_us: float
    busbw: float
    wrong: str
    bound_us: float = 0.0
    of_bound: float = 0.0
    busy: float = 0.0


@dataclass
class Output:
    rows: list[Row] = field(default_factory=list)
    alpha_us: float = 0.0  # emulated
    nic_efficiency: float = 0.0
    planes: dict[str, float] = field(default_factory=dict)  # share of the switches' bytes


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]  # after `fabric-lab perf`
    target: str  # what must hold, in words
    holds: Callable[[Output, dict[str, Output]], bool | None]  # None: reported only


def _last(out: Output) -> Row:
    return out.rows[-1]


CASES = [
    Case("leafspine-ring", ["all_reduce", *LEAFSPINE16, "--algo", "ring", "-b", "4M", "-e", "4M"],
         ">= 85% of the bound", lambda o, _: _last(o).of_bound >= 0.85),
    Case("leafspine-ring-50", ["all_reduce", *LEAFSPINE16, "--algo", "ring", "-b", "4M", "-e",
                               "4M", "--link-mbps", "50"],
         "busbw within 10% of leafspine-ring's",
         lambda o, seen: abs(_last(o).busbw / _last(seen["leafspine-ring"]).busbw - 1) <= 0.1
         if "leafspine-ring" in seen else None),
    Case("leafspine-8B", ["all_reduce", *LEAFSPINE16, "--algo", "ring", "-b", "8", "-e", "8"],
         "time = alpha x depth within 20%", lambda o, _: 0.8 <= _last(o).of_bound <= 1.2),
    Case("leafspine-broadcast", ["broadcast", *LEAFSPINE16, "-b", "4M", "-e", "4M"],
         ">= 80% of the NIC rate", lambda o, _: _last(o).busbw * 8 / MODELLED_GBPS >= 0.8),
    Case("hpn7-hier", ["all_reduce", *HPN16, "--algo", "hierarchical", "-b", "4M", "-e", "4M"],
         ">= 80% of the bound, plane B 40-60%",
         lambda o, _: _last(o).of_bound >= 0.8 and 0.4 <= o.planes.get("B", 0) <= 0.6),
    Case("hpn7-hier-10", ["all_reduce", *HPN16, "--algo", "hierarchical", "-b", "4M", "-e", "4M",
                          "--link-mbps", "10"],
         ">= 80% of the bound, plane B 40-60%",
         lambda o, _: _last(o).of_bound >= 0.8 and 0.4 <= o.planes.get("B", 0) <= 0.6),
    Case("aipod-ring", ["all_reduce", "--fabric", "aipod", "-b", "1M", "-e", "1M"], "reported",
         lambda o, _: None),
    Case("bigraph-hd", ["all_reduce", "--fabric", "bigraph", "--algo", "hd", "--order", "remap",
                        "-b", "1M", "-e", "1M"], "reported", lambda o, _: None),
]
QUICK = ["leafspine-ring", "leafspine-8B", "hpn7-hier"]
LINK_MBPS = 100.0  # fabric-lab perf's default
SLOWER = {"bmv2": 10.0}  # a target's rows run at the link rate / this


def at_rate(argv: list[str], target: str) -> list[str]:
    """`argv` on `target`: its link rate divided by SLOWER's factor."""
    factor = SLOWER.get(target, 1.0)
    if factor == 1.0:
        return argv
    if "--link-mbps" in argv:
        i = argv.index("--link-mbps") + 1
        return [*argv[:i], f"{float(argv[i]) / factor:g}", *argv[i + 1:]]
    return [*argv, "--link-mbps", f"{LINK_MBPS / factor:g}"]

BOUND = re.compile(r"^#\s+(\d+) B .*bound\s+([\d.]+) us,\s+([\d.]+)% /\s+([\d.]+)% of it;.*"
                   r"busy\s+(\d+)% /\s+(\d+)%")
ALPHA = re.compile(r"alpha (\d+) us per message hop emulated.* = ([\d.]+)% of its")
PLANE = re.compile(r"plane (\w+) [\d.]+ MB \(([\d.]+)%\)")


def parse(text: str) -> Output:
    out = Output()
    bounds = {}
    for line in text.splitlines():
        if m := BOUND.match(line):
            bounds[int(m[1])] = (float(m[2]), (float(m[3]) + float(m[4])) / 200,
                                 (float(m[5]) + float(m[6])) / 200)
        elif m := ALPHA.search(line):
            out.alpha_us, out.nic_efficiency = float(m[1]), float(m[2]) / 100
        elif line.startswith("# Bytes the switches of each plane"):
            out.planes = {p: float(s) / 100 for p, s in PLANE.findall(line)}
        elif line.strip() and not line.startswith("#"):
            c = line.split()  # nccl-tests' row: out of place, then in place
            out.rows.append(Row(int(c[0]), (float(c[5]) + float(c[9])) / 2,
                                (float(c[7]) + float(c[11])) / 2, f"{c[8]}/{c[12]}"))
    for r in out.rows:
        r.bound_us, r.of_bound, r.busy = bounds.get(r.size, (0.0, 0.0, 0.0))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}, -n 2")
    parser.add_argument("--targets", default="p4switch,bmv2",
                        help=f"comma-separated, of {', '.join(targets.CHOICES)} (default "
                             f"p4switch,bmv2)")
    parser.add_argument("--cases", help=f"comma-separated subset of "
                                        f"{', '.join(c.name for c in CASES)}")
    parser.add_argument("-n", "--iters", type=int, default=5)
    args = parser.parse_args()
    names = args.cases.split(",") if args.cases else [c.name for c in CASES]
    if args.quick and not args.cases:
        names = QUICK
    unknown = set(names) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown case(s) {', '.join(sorted(unknown))}")
    chosen = args.targets.split(",")
    if set(chosen) - set(targets.CHOICES):
        parser.error(f"unknown target(s) in {args.targets!r}")
    usable = []
    for t in chosen:
        missing = targets.get_target(t).missing()
        if missing:
            print(f"# {t}: skipped (not installed: {', '.join(missing)})")
        else:
            usable.append(t)
    iters = 2 if args.quick else args.iters
    print(f"# every case is one perf run with -n {iters}; time (us) and busbw (GB/s) modelled (a NIC stands "
          f"for {MODELLED_GBPS:g} Gb/s), the mean of out of place and in place")
    print(f"{'case':<20} {'target':<8} {'size':>8} {'time':>8} {'busbw':>7} {'bound':>8} "
          f"{'of it':>6} {'busy':>5} {'alpha':>7} {'planes':>11} {'#wrong':>7}  target")
    seen: dict[str, dict[str, Output]] = {t: {} for t in usable}
    failed = 0
    for case in (c for c in CASES if c.name in names):
        for target in usable:
            argv = ["fabric-lab", "perf", *at_rate(case.argv, target), "-n", str(iters),
                    "--target", target]
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "fabric_lab.cli", *argv[1:]],
                                  capture_output=True, text=True, timeout=3600)
            took = time.monotonic() - t0
            out = parse(proc.stdout)
            if proc.returncode not in (0, 1) or not out.rows:
                print(f"{case.name:<20} {target:<8} FAILED ({proc.returncode}): "
                      f"{proc.stderr.strip()[-300:]}")
                failed += 1
                continue
            seen[target][case.name] = out
            r = out.rows[-1]
            verdict = case.holds(out, seen[target])
            mark = "reported" if verdict is None else ("met" if verdict else "NOT MET")
            failed += verdict is False
            planes = "/".join(f"{p}{x:.0%}" for p, x in sorted(out.planes.items())) or "-"
            print(f"{case.name:<20} {target:<8} {r.size:>8} {r.time_us:>8.2f} {r.busbw:>7.2f} "
                  f"{r.bound_us:>8.2f} {r.of_bound:>6.0%} {r.busy:>5.0%} "
                  f"{out.alpha_us:>5.0f}us {planes:>11} {r.wrong:>7}  {case.target}: {mark}")
            print(f"  $ sudo {' '.join(argv)}   ({took:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
