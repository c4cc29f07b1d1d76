"""An experiment run that prints each stage it reaches and stops there, for the tests that kill
it: `python killable_run.py OUT STAGE` (stages: started, midway, first-written; without STAGE it runs to the end)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

from experiments.framework import Experiment, RunContext, execute
from experiments.framework.results import ResultDir

STOP = sys.argv[2] if len(sys.argv) > 2 else ""  # "": run to the end


def reach(stage: str) -> None:
    print(stage, flush=True)
    if stage == STOP:
        time.sleep(600)  # until the test kills us


def rows(count: int) -> Iterator[dict[str, int]]:
    for i in range(count):
        if i == 2:
            reach("midway")
        yield {"i": i, "square": i * i}


def run(ctx: RunContext) -> None:
    reach("started")
    ctx.out.write_csv("first.csv", rows(4), ["i", "square"])
    reach("first-written")
    ctx.out.write_csv("second.csv", rows(4), ["i", "square"])


def plot(result: ResultDir) -> list[Path]:
    return []


if __name__ == "__main__":
    killable = Experiment(name="killable", summary="", duration="", defaults={}, quick={},
                          run=run, plot=plot)
    execute(killable, out=Path(sys.argv[1]), progress=lambda _: None)
    print("end", flush=True)
