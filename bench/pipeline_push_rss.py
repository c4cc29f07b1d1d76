"""Memory of a switch across repeated pipeline pushes (SetForwardingPipelineConfig,
VERIFY_AND_COMMIT), as labs and `lb` mode changes do.

    .venv/bin/python bench/pipeline_push_rss.py [--target p4switch|bmv2] [--pushes 300]
        [--every 20] [--program p4src/ecmp.p4] [--alternate p4src/flowlet.p4]

Starts the switch with no interfaces, pushes the program `--pushes` times (each push installs
a fresh pipeline; a few table entries are written after each one so that the state is not
empty), and prints the switch's resident memory (VmRSS) every `--every` pushes, then the growth
per push from the second sample on (the first push allocates what every later one reuses).
With `--alternate`, every other push is that program instead (as `lb` mode changes do).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from p4.v1 import p4runtime_pb2

from controller.p4rt import P4RuntimeClient
from controller.pipeline import build_pipeline
from targets import get_target
from topos.mininet.procs import accepts, stop_child
from topos.model import Switch

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"process {pid} has no VmRSS")


def some_entries(p4info, count: int = 8) -> list[p4runtime_pb2.Update]:
    """INSERTs of `count` entries into the first table with an exact key and an action
    without parameters (none if the program has no such table)."""
    actions = {a.preamble.id: a for a in p4info.actions}
    for table in p4info.tables:
        fields = list(table.match_fields)
        if not fields or any(mf.match_type != mf.EXACT for mf in fields):
            continue
        action = next((actions[r.id] for r in table.action_refs
                       if not actions[r.id].params and r.scope != r.DEFAULT_ONLY), None)
        if action is None:
            continue
        out = []
        for i in range(count):
            u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
            te = u.entity.table_entry
            te.table_id = table.preamble.id
            for mf in fields:
                te.match.add(field_id=mf.id).exact.value = (i + 1).to_bytes(
                    (mf.bitwidth + 7) // 8, "big")
            te.action.action.action_id = action.preamble.id
            out.append(u)
        return out
    return []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="p4switch")
    ap.add_argument("--pushes", type=int, default=300)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--program", type=Path, default=ROOT / "p4src" / "ecmp.p4")
    ap.add_argument("--alternate", type=Path, help="push this program every other time")
    args = ap.parse_args()

    target = get_target(args.target)
    pipelines = [build_pipeline(p, target) for p in (args.program, args.alternate) if p]
    model = Switch("rss0", "leaf", 0, device_id=1, grpc_port=free_port(),
                   thrift_port=free_port())
    proc = subprocess.Popen(target.argv(model, {}), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not accepts(model.grpc_port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{target.name} did not start")
            time.sleep(0.05)
        entries = [some_entries(p.p4info) for p in pipelines]
        samples: list[tuple[int, float]] = []
        start = time.monotonic()
        with P4RuntimeClient(model.grpc_addr, model.device_id) as client:
            for push in range(1, args.pushes + 1):
                pipeline = pipelines[push % len(pipelines)]
                client.set_pipeline(pipeline.p4info, pipeline.device_config, push)
                if entries[push % len(pipelines)]:
                    client.write(entries[push % len(pipelines)])
                if push == 1 or push % args.every == 0:
                    samples.append((push, rss_mb(proc.pid)))
                    print(f"push {push:5d}  RSS {samples[-1][1]:7.1f} MB", flush=True)
        elapsed = time.monotonic() - start
        (n0, r0), (n1, r1) = samples[min(1, len(samples) - 1)], samples[-1]
        per_push = (r1 - r0) / (n1 - n0) * 1024 if n1 > n0 else 0.0
        names = " and ".join(p.program.name for p in pipelines)
        print(f"{target.name}: {args.pushes} pushes of {names} in {elapsed:.1f} s; "
              f"RSS {samples[0][1]:.1f} MB after the first, {r1:.1f} MB after the last; "
              f"{per_push:+.0f} kB per push from push {n0} on")
    finally:
        stop_child(proc, 10, group=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
