"""A tiny real experiment (numbers, a CSV and a matplotlib plot) for testing the framework."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from experiments.framework import Experiment, RunContext
from experiments.framework.results import ResultDir


def _squares_run(ctx: RunContext) -> None:
    rows = [{"n": n, "square": n * n} for n in range(ctx.params["count"])]
    ctx.out.write_csv("squares.csv", rows, ["n", "square"])


def _squares_plot(result: ResultDir) -> list[Path]:
    rows = result.read_csv("squares.csv")
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([int(r["n"]) for r in rows], [int(r["square"]) for r in rows])
    target = result.path / "squares.png"
    fig.savefig(target)
    plt.close(fig)
    return [target]


SQUARES = Experiment(name="squares", summary="n against n squared", duration="instant",
                     defaults={"count": 10, "label": "x", "ratio": 0.5, "enabled": False, "sizes": [1, 2]},
                     quick={"count": 3}, run=_squares_run, plot=_squares_plot)



@pytest.fixture
def squares() -> Experiment:
    return SQUARES
