#!/usr/bin/env python3
"""Benchmark: p4switch against BMv2 (`simple_switch_grpc`), same harness, same programs.

p4switch runs on its native pipeline (`--pipeline native`, built first: p4switch/native.py),
its Python pipeline (`--pipeline python`) and its C data plane's engine in the Python loop
(`--pipeline c`); `--pipelines` picks among them.

Two host namespaces, each linked by a veth pair to a switch port; the switch routes 10.0.2.0/24
from port 1 to port 2 through the ECMP selector (a one-member group), programmed over P4Runtime.
For p4src/ecmp.p4 and p4src/dlb.p4, on each target, with UDP frames of 64 B and 1000 B:

- latency: one stamped frame every 5 ms through the otherwise idle switch; one-way p50/p99 (µs,
  receiver wake-up included, the same for both targets);
- lossless: paced senders (1 ms batches) at increasing rates for `--seconds` each; the highest
  rate forwarded without loss (in one of `--tries` runs);
- max rate: a flood sender in h1 (one core, as fast as its raw socket sends) for `--flood`
  seconds; forwarded packets/s = frames received in h2 / time from the first to the last (the
  switch's backlog then drains before anything else is measured);
- CPU per forwarded packet: the switch process's utime + stime (/proc/<pid>/stat) over the flood
  run, divided by the frames it forwarded; RSS: the switch process's VmRSS after the runs.

Also the start-up time (process start to gRPC accepting, `--no-p4`). Without BMv2
(simple_switch_grpc and p4c-bm2-ss on PATH) its columns say so.

A switch in C without a P4 program, measured by the same harness: the C data plane's
forwarder (p4switch/cdp/forward.py, port 1 to port 2 on the C loop of p4switch/cdp/c/ports.c:
the same rings, wake-ups and transmit bursts as a p4switch); `--no-c-forward` skips it.

The kernel's own limit on the same veth pairs, measured by the same harness: no switch process,
a `tc` ingress filter on port 1 redirecting every frame to port 2's egress (`mirred egress
redirect`), so the frame crosses the kernel as it does through a switch but no user space runs
(its CPU is the sender's softirq work, not a process's: that cell is empty). The Python flood
sender is slower than that redirect, so every column also gets a second flood from a C sender
(bench/flood_sender.c, sendmmsg in batches of 64, on CPU 0, compiled by the bench when a C
compiler is present): the kernel counts the frames arriving on port 1 and leaving port 2 over
the middle half of the run. Where the kernel forwards everything that arrives, the sender, not
the kernel, is the limit, and the bench says so.

    sudo .venv/bin/python bench/switch_pps.py [--programs ecmp,dlb] [--sizes 64,1000]
        [--rates 5000,10000,...] [--seconds 2] [--tries 2] [--flood 3] [--latency 2]
        [--pipelines native,python,c] [--no-c-forward] [--no-kernel] [--no-c-sender]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from switch_pps_io import (  # noqa: E402
    Bench,
    build_flood_sender,
    drain,
    run_c_flood,
    run_rate,
    run_traffic,
    sh,
)

from topos.mininet.procs import accepts, spawn  # noqa: E402

__all__ = ["Bench", "run_rate"]
DEFAULT_RATES = "5000,10000,15000,20000,25000,30000,40000,50000,60000,70000,80000,90000,100000,120000"
# the columns: (target, its extra options)
VARIANTS = {"native": ("p4switch", ("--pipeline", "native")),
            "python": ("p4switch", ("--pipeline", "python")),
            "c": ("p4switch", ("--pipeline", "c")),
            "bmv2": ("bmv2", ())}
TICKS = os.sysconf("SC_CLK_TCK")
LATENCY_GAP_US = 5000
TARGET = 10  # p4switch's native packets/s over BMv2's, forwarded and lossless: the aim


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_split(pid: int) -> tuple[float, float]:
    """(user, kernel) CPU seconds of a process so far (/proc/<pid>/stat utime, stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


def cpu_seconds(pid: int) -> float:
    return sum(cpu_split(pid))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_switch(target: str, ports: dict[int, str], log: Path, options: tuple[str, ...] = ()
                 ) -> tuple[subprocess.Popen, str, float]:
    """Start `target` with `--no-p4`; (process, gRPC address, seconds until gRPC accepts)."""
    proc, addrs, seconds = start_switches(target, [ports], log, options)
    return proc, addrs[0], seconds


def start_switches(target: str, group: list[dict[int, str]], log: Path,
                   options: tuple[str, ...] = ()) -> tuple[subprocess.Popen, list[str], float]:
    """One `target` process serving a switch per ports map of `group` (more than one: p4switch
    only), each with `--no-p4` and `options`; (process, their gRPC addresses, seconds until
    all accept)."""
    from targets import get_target
    from topos.model import Switch

    models = [Switch(f"bench{i}", "leaf", i + 1, device_id=1, grpc_port=free_port(),
                     thrift_port=free_port()) for i in range(len(group))]
    chosen = get_target(target).with_options(*options)
    argvs = [chosen.argv(model, ports) for model, ports in zip(models, group, strict=True)]
    argv = argvs[0] if len(argvs) == 1 else chosen.group_argv(argvs)
    start = time.monotonic()
    with open(log, "ab") as out:
        proc = spawn(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    for model in models:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"{target} exited with {proc.returncode}; see {log}")
            if accepts(model.grpc_port, timeout=0.1):
                break
            time.sleep(0.002)
    return proc, [model.grpc_addr for model in models], time.monotonic() - start


def start_forwarder(ports: dict[int, str], log: Path) -> subprocess.Popen:
    """p4switch/cdp/forward.py between ports 1 and 2, once it reports its ports open."""
    with open(log, "ab") as err:
        proc = subprocess.Popen([sys.executable, "-m", "p4switch.cdp.forward",
                                 f"1@{ports[1]}", f"2@{ports[2]}"], cwd=REPO,
                                stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.wait()
        raise SystemExit(f"the C forwarder exited with {proc.returncode}; see {log}")
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def program_route(addr: str, pipeline) -> None:
    """Push the pipeline; route 10.0.2.0/24 to port 2 through a one-member ECMP group."""
    from p4.v1 import p4runtime_pb2 as pb

    from controller.p4rt import P4RuntimeClient
    from controller.schema import Schema
    from mechanisms import routing

    schema = Schema(pipeline.p4info)
    table = schema.table(routing.LPM_TABLE)
    action = schema.action(routing.NEXT_HOP_ACTION)
    profile = schema.profile_of(routing.LPM_TABLE)
    with P4RuntimeClient(addr, 1, name="bench switch") as client:
        client.set_pipeline(pipeline.p4info, pipeline.device_config)
        member = pb.ActionProfileMember(action_profile_id=profile.preamble.id, member_id=1)
        member.action.action_id = action.preamble.id
        member.action.params.add(param_id=1, value=b"\x02")
        member.action.params.add(param_id=2, value=bytes.fromhex("020000000002"))
        group = pb.ActionProfileGroup(action_profile_id=profile.preamble.id, group_id=1,
                                      max_size=4)
        group.members.add(member_id=1, weight=1)
        entry = pb.TableEntry(table_id=table.preamble.id)
        lpm = entry.match.add(field_id=1).lpm
        lpm.value, lpm.prefix_len = socket.inet_aton("10.0.2.0"), 24
        entry.action.action_profile_group_id = 1
        for name, msg in (("action_profile_member", member), ("action_profile_group", group),
                          ("table_entry", entry)):
            update = pb.Update(type=pb.Update.INSERT)
            getattr(update.entity, name).CopyFrom(msg)
            client.write([update])


@contextlib.contextmanager
def kernel_redirect(src: str, dst: str):
    """Every frame arriving on `src` sent out of `dst` by the kernel (tc ingress, u32 match
    all, mirred egress redirect); removed on exit."""
    sh("tc", "qdisc", "add", "dev", src, "ingress")
    try:
        sh("tc", "filter", "add", "dev", src, "parent", "ffff:", "protocol", "all", "u32",
           "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", dst)
        yield
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", src, "ingress"], capture_output=True)


def measure(bench: Bench, proc: subprocess.Popen | None, size: int, args,
            sender: Path | str) -> dict[str, float]:
    """Every figure for one frame size on a running, programmed switch (None: the kernel's
    redirect, no process): latency first (idle switch), then the paced ladder, then the flood,
    then the C sender's flood (`sender`: its binary, or why there is none); the switch's
    backlog drains after each flood."""
    tx, rx = bench.ns
    out: dict[str, float] = {}
    drain(rx)
    _, _, got, _, p50, p99 = run_traffic(tx, rx, -LATENCY_GAP_US, args.latency, size)
    out["lat_p50_us"], out["lat_p99_us"] = p50, p99
    best = 0
    for rate in (int(r) for r in args.rates.split(",")):
        if not any(received == sent for sent, received in
                   (run_rate(tx, rx, rate, args.seconds, size) for _ in range(args.tries))):
            break  # the highest rate before the first loss is the figure
        best = rate
    out["lossless_pps"] = best
    drain(rx)
    cpu0 = cpu_seconds(proc.pid) if proc is not None else 0.0
    sent, took, got, span, _, _ = run_traffic(tx, rx, 0, args.flood, size)
    cpu = cpu_seconds(proc.pid) - cpu0 if proc is not None else float("nan")
    out["offered_pps"] = sent / took
    out["max_pps"] = (got - 1) / span if got > 1 and span > 0 else 0.0
    out["lost_in_flood"] = sent - got
    out["cpu_us_per_pkt"] = cpu / got * 1e6 if got else float("nan")
    out["rss_mb"] = rss_mb(proc.pid) if proc is not None else float("nan")
    drain(rx)
    out["c_arrived_pps"] = out["c_max_pps"] = float("nan")
    if isinstance(sender, Path):
        out["c_arrived_pps"], out["c_max_pps"] = run_c_flood(
            tx, sender, (bench.links[0], bench.links[1]), args.flood, size)
        drain(rx)
    return out


ROWS = (("max_pps", "forwarded pps, flood sender", "{:.0f}"),
        ("offered_pps", "  (offered by the sender, pps)", "{:.0f}"),
        ("c_max_pps", "forwarded pps, C flood sender", "{:.0f}"),
        ("c_arrived_pps", "  (arrived on port 1, pps)", "{:.0f}"),
        ("lossless_pps", "lossless paced rate, pps", "{:.0f}"),
        ("lat_p50_us", "latency p50, µs", "{:.0f}"),
        ("lat_p99_us", "latency p99, µs", "{:.0f}"),
        ("cpu_us_per_pkt", "CPU per forwarded packet, µs", "{:.1f}"),
        ("rss_mb", "switch RSS, MB", "{:.0f}"))


def _cell(figures: dict[str, float] | str | None, key: str, fmt: str) -> str:
    if not isinstance(figures, dict):
        return figures or "-"
    value = figures[key]
    return "-" if value != value else fmt.format(value)  # NaN: not measured for this target


def _ratio(a: dict[str, float] | str | None, b: dict[str, float] | str | None, key: str) -> str:
    if isinstance(a, dict) and isinstance(b, dict) and b[key] and a[key] == a[key] \
            and b[key] == b[key]:  # neither is NaN
        return f"{a[key] / b[key]:.2f}"
    return "-"


def report(program: str, size: int, figures: dict[str, dict[str, float] | str],
           forwarder: dict[str, float] | None, kernel: dict[str, float] | None) -> None:
    """The table for one program and frame size: p4switch native, Python and C, BMv2, the C
    forwarder, the kernel's redirect, and their ratios."""
    a, py, c, b = (figures.get(v) for v in ("native", "python", "c", "bmv2"))
    columns = [("native", a), ("python", py), ("c", c), ("BMv2", b), ("C forwarder", forwarder),
               ("kernel", kernel)]
    ratios = [("native/python", a, py), ("native/BMv2", a, b), ("c/BMv2", c, b),
              ("native/C fwd", a, forwarder), ("native/kernel", a, kernel)]
    print(f"\n{program}.p4, {size} B frames")
    print(f"  {'':34}" + "".join(f"{name:>15}" for name, _ in columns)
          + "".join(f"{name:>15}" for name, _, _ in ratios))
    for key, label, fmt in ROWS:
        print(f"  {label:34}" + "".join(f"{_cell(f, key, fmt):>15}" for _, f in columns)
              + "".join(f"{_ratio(x, y, key):>15}" for _, x, y in ratios))
    for name, x in (("native", a), ("c", c)):
        if not isinstance(x, dict) or not isinstance(b, dict):
            continue
        verdicts = [f"{label} x{x[key] / b[key]:.2f} "
                    f"({'met' if x[key] >= TARGET * b[key] else 'NOT met'})"
                    for key, label in (("max_pps", "forwarded"), ("c_max_pps", "forwarded, C sender"),
                                       ("lossless_pps", "lossless"))
                    if b[key] and b[key] == b[key]]
        print(f"  target p4switch {name} >= {TARGET} x BMv2: " + "; ".join(verdicts))
    if kernel is None:
        return
    if kernel["c_max_pps"] == kernel["c_max_pps"]:  # measured with the C sender
        if kernel["c_max_pps"] >= 0.99 * kernel["c_arrived_pps"]:
            print("  the kernel forwarded everything that arrived from the C sender, whose core "
                  "also does the redirect's work: its limit is higher than this harness can show")
        else:
            print(f"  the kernel's limit on this veth pair: {kernel['c_max_pps']:.0f} pps "
                  f"(of {kernel['c_arrived_pps']:.0f} arriving)")
    elif kernel["lost_in_flood"] <= 0.001 * kernel["offered_pps"]:
        print("  the kernel forwarded everything the flood sender offered: its limit is higher "
              "than this harness can show")


def native_missing(program: str) -> str:
    """Why `program` has no native pipeline here ("" once it is built and kept)."""
    from mechanisms import program_path
    from p4switch.compiler import compile_program
    from p4switch.native import NativeUnavailable, native_module

    try:
        native_module(compile_program(program_path(program)).native_source, program)
    except NativeUnavailable as exc:
        print(f"{program}: no native pipeline: {exc}")
        return "no native"
    return ""


def bmv2_missing() -> str:
    import shutil

    return "" if shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss") else \
        "not installed"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", default="ecmp,dlb")
    p.add_argument("--sizes", default="64,1000")
    p.add_argument("--rates", default=DEFAULT_RATES)
    p.add_argument("--seconds", type=float, default=2.0, help="per paced rate")
    p.add_argument("--tries", type=int, default=2,
                   help="runs per paced rate; the rate counts as lossless if one of them is (a "
                   "shared machine stalls the switch now and then)")
    p.add_argument("--flood", type=float, default=3.0, help="seconds of the flood run")
    p.add_argument("--latency", type=float, default=2.0, help="seconds of stamped frames")
    p.add_argument("--pipelines", default="native,python,c",
                   help="p4switch's pipelines to measure (some of native, python, c)")
    p.add_argument("--no-kernel", action="store_true",
                   help="skip the kernel's own limit (tc mirred redirect)")
    p.add_argument("--no-c-forward", action="store_true",
                   help="skip the C forwarder (p4switch/cdp/forward.py, no P4 program)")
    p.add_argument("--no-c-sender", dest="c_sender", action="store_false",
                   help="skip the floods of the C sender (bench/flood_sender.c)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("switch_pps: needs root (namespaces, raw sockets)", file=sys.stderr)
        return 1
    from controller.pipeline import build_pipeline
    from mechanisms import program_path

    pipelines = [v for v in args.pipelines.split(",") if v]
    if not pipelines or set(pipelines) - {"native", "python", "c"}:
        p.error(f"--pipelines: some of native, python, c, got {args.pipelines!r}")
    variants = [*pipelines, "bmv2"]
    missing = {"native": "", "python": "", "c": "", "bmv2": bmv2_missing()}
    bench = Bench()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    try:
        p1, p2 = bench.setup()
        ports = {1: p1, 2: p2}
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "switch.log"
            sender = build_flood_sender(Path(tmp)) if args.c_sender else "--no-c-sender"
            if not isinstance(sender, Path):
                print(f"C flood sender: {sender}; its rows are empty")
            for variant in variants:
                if missing[variant]:
                    print(f"start-up to gRPC ready, {variant}: {missing[variant]}")
                    continue
                target, options = VARIANTS[variant]
                proc, _, seconds = start_switch(target, ports, log, options)
                stop(proc)
                print(f"start-up to gRPC ready (--no-p4), {variant}: {seconds:.3f} s")
            forwarder: dict[int, dict[str, float]] = {}
            if not args.no_c_forward:
                proc = start_forwarder(ports, log)
                try:
                    for size in map(int, args.sizes.split(",")):
                        forwarder[size] = measure(bench, proc, size, args, sender)
                finally:
                    stop(proc)
            kernel: dict[int, dict[str, float]] = {}
            if not args.no_kernel:
                with kernel_redirect(p1, p2):
                    for size in map(int, args.sizes.split(",")):
                        kernel[size] = measure(bench, None, size, args, sender)
            for program in args.programs.split(","):
                figures: dict[int, dict[str, dict[str, float] | str]] = {}
                for variant in variants:
                    target, options = VARIANTS[variant]
                    why = missing[variant] or (native_missing(program) if variant == "native"
                                               else "")
                    if why:
                        for size in map(int, args.sizes.split(",")):
                            figures.setdefault(size, {})[variant] = why
                        continue
                    pipeline = build_pipeline(program_path(program), target)
                    proc, addr, _ = start_switch(target, ports, log, options)
                    try:
                        program_route(addr, pipeline)
                        for size in map(int, args.sizes.split(",")):
                            figures.setdefault(size, {})[variant] = measure(
                                bench, proc, size, args, sender)
                    finally:
                        stop(proc)
                for size, by_target in figures.items():
                    report(program, size, by_target, forwarder.get(size), kernel.get(size))
    finally:
        bench.cleanup()
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
