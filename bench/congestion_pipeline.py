"""What ECN marking, PFC accounting and queue telemetry cost per packet in the p4switch engine.

The lab's ECMP program with a route out of one port, RoCEv2 frames (DSCP 26, ECT(0)) from an
upstream port, run through ingress and egress with a chosen enqueue depth:
- `off`: no congestion entries (the tables miss);
- `ecn`: RED profile kmin 5 / kmax 20 / pmax 0.2, packets enqueued at depth 8 (a draw each);
- `ecn+pfc`: plus PFC on the port (XOFF 10), depth 8 (below XOFF: state read, no frame);
- `pfc-xoff`: depth 30 with the refresh due on every packet, so each packet also makes a PFC
  frame (ingress clone + egress rewrite).
Prints packets/s by process CPU time (one core), which other load on the machine hardly moves.

    .venv/bin/python bench/congestion_pipeline.py [--packets N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.framework.engine_switch import load_program  # noqa: E402
from mechanisms import ecn, pfc, routing  # noqa: E402
from p4switch.engine import EngineConfig  # noqa: E402
from p4switch.runtime import RuntimeState  # noqa: E402
from p4switch.runtime.cli_commands import CliInterpreter  # noqa: E402


def frame() -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst="02:53:00:01:00:01", src="02:00:0a:00:00:01")
                 / IP(src="10.0.0.1", dst="10.0.1.1", tos=26 << 2 | 2, ttl=64)
                 / UDP(sport=49153, dport=4791) / bytes(1036))


def engine(setting: str):
    compiled = load_program("ecmp")
    state = RuntimeState(compiled.model)
    cli = CliInterpreter(state)
    commands = [
        f"act_prof_create_member {routing.SELECTOR} {routing.NEXT_HOP_ACTION} 2 0x02000a000101",
        f"table_indirect_add {routing.LPM_TABLE} 10.0.1.1/32 => 0",
        f"table_add {pfc.CLASS_TABLE} {pfc.CLASS_ACTION} 26 => 3",
    ]
    if "ecn" in setting:
        commands += [f"table_add {ecn.PROFILE_TABLE} {ecn.MARK_ACTION} "
                     f"{d}->{d} => {round(0.2 * (d - 5) / 15 * 65535)} 1" for d in range(6, 20)]
        commands.append(f"table_add {ecn.PROFILE_TABLE} {ecn.MARK_ACTION} "
                        f"20->{ecn.MAX_DEPTH} => {ecn.ALWAYS} 1")
    if "pfc" in setting:
        refresh = 0 if setting == "pfc-xoff" else 20_000
        commands += [
            f"table_add {pfc.CONFIG_TABLE} {pfc.CONFIG_ACTION} 2 3 => 10 4 1000 {refresh}",
            f"table_add {pfc.PROPAGATION_TABLE} {pfc.PROPAGATION_ACTION} 2 3 => 5 1000 {refresh}",
            f"table_add {pfc.LINK_TABLE} {pfc.LINK_ACTION} 1 => 52429",
            f"mirroring_add {pfc.SESSION_BASE + 1} 1",
        ]
    for line in commands:
        out = cli.execute(line)
        if cli.failed:
            raise SystemExit(f"{line}: {out}")
    return compiled.new_engine(state, EngineConfig(priority_queues=8))


def measure(eng, depth: int, count: int) -> tuple[float, int]:
    data = frame()
    frames = 0
    start = time.process_time()
    for _ in range(count):
        for item in eng.ingress(1, data):
            out, more = eng.egress(item, 0, depth, depth, 0)
            frames += len(out)
            for clone in more:
                frames += len(eng.egress(clone)[0])
    return count / (time.process_time() - start), frames


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--packets", type=int, default=20_000)
    args = p.parse_args()
    print(f"{'setting':<10} {'depth':>5} {'pps (CPU)':>10} {'frames out':>10}")
    for setting, depth in (("off", 8), ("ecn", 8), ("ecn+pfc", 8), ("pfc-xoff", 30)):
        eng = engine(setting)
        measure(eng, depth, 500)  # warm-up
        pps, frames = measure(eng, depth, args.packets)
        print(f"{setting:<10} {depth:>5} {pps:>10.0f} {frames:>10}")


if __name__ == "__main__":
    main()
