"""Packets per second through the p4switch engine alone (Engine.process, one core).

The lab's ECMP program (p4src/ecmp.p4) with a /24 route to a 4-member ECMP group, per-port
source MACs and RoCEv2 traffic whose UDP source port varies per packet (so the selector hash,
the flow hash and the checksum update all run). Prints pps for 64-byte and 1000-byte frames,
by process CPU time (the one-core figure, robust to other load on the machine) and by
wall-clock time, on the program's native pipeline (p4switch/native.py, built first), its
Python pipeline and its C data plane (p4switch/cdp/pipeline.py: the tables copied into C once,
each packet then through one C call), interleaved `--rounds` times (the best round of each is
printed) after checking that all emit the same frames.

    .venv/bin/python bench/engine_pps.py [--packets N] [--rounds R] [--program p4src/ecmp.p4]
        [--pipelines native,python,c]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mechanisms import port_io, program_path, routing  # noqa: E402
from p4switch.compiler import compile_program  # noqa: E402
from p4switch.cpmodel import ActionCall, FieldMatch  # noqa: E402
from p4switch.engine import EngineConfig  # noqa: E402
from p4switch.native import NativeUnavailable  # noqa: E402
from p4switch.runtime import Entry, GroupRef, RuntimeState  # noqa: E402


def frame(size: int, sport: int) -> bytes:
    """Ethernet/IPv4/UDP(4791)/BTH padded to `size` bytes."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    pkt = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02") / IP(
        src="10.0.1.1", dst="10.0.2.7", ttl=64) / UDP(sport=sport, dport=4791) / bytes(12)
    raw = bytes(pkt)
    return raw + bytes(max(0, size - len(raw)))


def setup(path: Path):
    return populate(compile_program(path))


def populate(program, pipeline: str = "python"):
    """An engine of `program` with the bench's routes, ECMP group and source MACs, on
    `pipeline` (python, native or c)."""
    state = RuntimeState(program.model)
    prof = state.action_profiles[routing.SELECTOR]
    for member in range(4):
        prof.insert_member(member + 1, ActionCall(routing.NEXT_HOP_ACTION,
                                                  (member + 1, 0x020000000010 + member)))
    prof.insert_group(1, [(m + 1, 1, None) for m in range(4)], 16)
    state.tables[routing.LPM_TABLE].insert(
        Entry(keys=(FieldMatch("lpm", value=0x0A000200, prefix_len=24),), action=GroupRef(1)))
    macs = state.tables[port_io.SOURCE_MAC_TABLE]
    for port in range(1, 5):
        macs.insert(Entry(keys=(FieldMatch("exact", value=port),),
                          action=ActionCall(port_io.SOURCE_MAC_ACTION,
                                            (0x020000000100 + port,))))
    if pipeline == "c":
        from p4switch.cdp.pipeline import CPipeline

        engine = CPipeline(program, state, EngineConfig(), copy_each_packet=False)
        engine.sync()
        return engine
    return program.new_engine(state, EngineConfig(), native=pipeline == "native")


def measure(engine, size: int, count: int) -> tuple[float, float]:
    """(pps by process CPU time, pps by wall-clock time)."""
    frames = [frame(size, 49152 + i) for i in range(256)]
    for f in frames:  # warm-up, and check the program forwards them
        out = engine.process(1, f)
        if len(out) != 1:
            raise SystemExit(f"expected one output frame, got {out!r}")
    start, cpu = time.perf_counter(), time.process_time()
    process = engine.process
    for i in range(count):
        process(1, frames[i & 255])
    return count / (time.process_time() - cpu), count / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--program", type=Path, default=program_path("ecmp"))
    ap.add_argument("--pipelines", default="native,python,c")
    args = ap.parse_args()
    pipelines = [p for p in args.pipelines.split(",") if p]
    if not pipelines or set(pipelines) - {"native", "python", "c"} or args.rounds < 1:
        ap.error("--pipelines: some of native, python, c; --rounds at least 1")
    program = compile_program(args.program)
    engines = {}
    for pipeline in pipelines:
        try:
            engines[pipeline] = populate(program, pipeline)
        except NativeUnavailable as exc:
            print(f"{args.program.name}: no {pipeline} pipeline: {exc}", file=sys.stderr)
            return 1
    probe = [frame(size, 49152 + i) for size in (64, 1000) for i in range(64)]
    first, *others = engines
    for other in others:
        if any(engines[first].process(1, f) != engines[other].process(1, f) for f in probe):
            print(f"{args.program.name}: the {first} and {other} pipelines differ",
                  file=sys.stderr)
            return 1
    for size in (64, 1000):
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.rounds):
            for pipeline, engine in engines.items():
                cpu_pps, wall_pps = measure(engine, size, args.packets)
                if cpu_pps > best.get(pipeline, (0.0, 0.0))[0]:
                    best[pipeline] = (cpu_pps, wall_pps)
        for pipeline, (cpu_pps, wall_pps) in best.items():
            print(f"{args.program.name} {pipeline:>6}: {size:5d}-byte frames: {cpu_pps:10,.0f} "
                  f"pps per CPU second ({1e6 / cpu_pps:.1f} us/packet), {wall_pps:10,.0f} pps "
                  "wall clock")
        for pipeline in ("native", "c"):
            if pipeline in best and "python" in best:
                print(f"{args.program.name}: {pipeline} / python "
                      f"{best[pipeline][0] / best['python'][0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
