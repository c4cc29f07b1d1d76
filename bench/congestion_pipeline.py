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

from experiments.lb.single_switch import load_program  # noqa: E402
from p4switch.engine import EngineConfig  # noqa: E402
from p4switch.runtime import RuntimeState  # noqa: E402
from p4switch.runtime.cli_commands import RuntimeCli  # noqa: E402


def frame() -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst="02:53:00:01:00:01", src="02:00:0a:00:00:01")
                 / IP(src="10.0.0.1", dst="10.0.1.1", tos=26 << 2 | 2, ttl=64)
                 / UDP(sport=49153, dport=4791) / bytes(1036))


def engine(setting: str):
    compiled = load_program("ecmp")
    state = RuntimeState(compiled.model)
    cli = RuntimeCli(state)
    commands = [
        "act_prof_create_member FabricIngress.routing.ecmp_selector "
        "FabricIngress.routing.set_next_hop 2 0x02000a000101",
        "table_indirect_add FabricIngress.routing.ipv4_lpm 10.0.1.1/32 => 0",
        "table_add FabricIngress.traffic_class.dscp_priority "
        "FabricIngress.traffic_class.set_priority 26 => 3",
    ]
    if "ecn" in setting:
        commands += [f"table_add FabricEgress.ecn.ecn_profile FabricEgress.ecn.set_mark_threshold "
                     f"{d}->{d} => {round(0.2 * (d - 5) / 15 * 65535)} 1" for d in range(6, 20)]
        commands.append("table_add FabricEgress.ecn.ecn_profile "
                        "FabricEgress.ecn.set_mark_threshold 20->524287 => 65535 1")
    if "pfc" in setting:
        refresh = 0 if setting == "pfc-xoff" else 20_000
        commands += [
            f"table_add FabricEgress.pfc.pfc_config FabricEgress.pfc.enable_pfc 2 3 => "
            f"10 4 1000 {refresh}",
            "table_add FabricIngress.pfc_reception.pfc_propagation "
            f"FabricIngress.pfc_reception.propagate_pfc 2 3 => 5 1000 {refresh}",
            "table_add FabricIngress.pfc_reception.pfc_link "
            "FabricIngress.pfc_reception.set_quantum 1 => 52429",
            "mirroring_add 1001 1",
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
