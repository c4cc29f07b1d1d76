"""An experiment run that appends a row at a time, for the tests that interrupt, kill or race it:
`python measuring_run.py OUT ROWS` prints `row N` once row N is appended (flushed) and measures
the next only when a line arrives on stdin; Ctrl-C (SIGINT) exits 130, as `fabric-lab` does."""

from __future__ import annotations

import sys
from pathlib import Path

from experiments.framework import Experiment, RunContext, execute
from experiments.framework.results import ResultDir

FIELDS = ["i", "square"]


def run(ctx: RunContext) -> None:
    print("started", flush=True)
    with ctx.out.append_csv("squares.csv", FIELDS) as squares:
        for i in range(ctx.params["rows"]):
            sys.stdin.readline()  # the test says when to measure the next
            squares.append({"i": i, "square": i * i})
            print(f"row {i}", flush=True)


def plot(result: ResultDir) -> list[Path]:
    return []


if __name__ == "__main__":
    measuring = Experiment(name="measuring", summary="", duration="",
                           defaults={"rows": int(sys.argv[2])}, quick={}, run=run, plot=plot)
    try:
        execute(measuring, out=Path(sys.argv[1]), progress=lambda _: None)
    except KeyboardInterrupt:
        sys.exit(130)
    print("end", flush=True)
