"""How long the runtime-CLI client takes per command on each target, and a one-shot client.

Starts each installed target's switch (`Target.argv`, free ports, no interfaces; no root needed),
sets ecmp.p4 over P4Runtime, then times with `target.cli(port)`: the first command (connecting:
for BMv2 starting `simple_switch_CLI`, which fetches the switch's JSON), then single commands
(`register_read` of one telemetry cell), and `controller.queues.run_commands` (a client per
call, as `fabric-lab up --queue-depth` uses).

    .venv/bin/python bench/runtime_cli.py [--commands 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controller.queues import run_commands  # noqa: E402
from experiments.framework.telemetry import REGISTERS, telemetry_cell  # noqa: E402
from targets import TARGETS  # noqa: E402
from tests.targets.conftest import running_switch  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commands", type=int, default=200, help="timed single commands per target")
    args = p.parse_args()
    read = f"register_read {REGISTERS['depth_last']} {telemetry_cell(1, 3)}"
    print(f"{'target':<10}{'first ms':>10}{'per command ms':>16}{'p99 ms':>8}{'one-shot ms':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, target in TARGETS.items():
            if not target.available():
                print(f"{name:<10}  not installed ({', '.join(target.missing())})")
                continue
            with running_switch(target, Path(tmp) / f"{name}.log") as switch:
                port = switch.model.thrift_port
                with target.cli(port) as cli:
                    start = time.perf_counter()
                    cli.command(read)
                    first = time.perf_counter() - start
                    times = []
                    for _ in range(args.commands):
                        start = time.perf_counter()
                        cli.command(read)
                        times.append(time.perf_counter() - start)
                shots = []
                for _ in range(5):
                    start = time.perf_counter()
                    run_commands(target, port, [read])
                    shots.append(time.perf_counter() - start)
            times.sort()
            print(f"{name:<10}{first * 1e3:>10.1f}{statistics.median(times) * 1e3:>16.3f}"
                  f"{times[int(len(times) * 0.99) - 1] * 1e3:>8.3f}"
                  f"{statistics.median(shots) * 1e3:>13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
