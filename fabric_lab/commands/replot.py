"""`fabric-lab replot DIR`: redraw an experiment's plots from the CSV files of its result directory.

The experiment is the one params.json names; its `plot` reads only the directory's CSV files (and
params.json), so this needs no root, no switches and no rerun. The PNGs are drawn again in place,
e.g. after changing a plot's code, or on a machine the results were copied to.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from experiments.framework.registry import get
from experiments.framework.results import PARAMS_FILE, ResultDir, run_state
from topos.errors import FabricLabError


class ReplotError(FabricLabError):
    """A directory that is not a complete experiment result."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replot", help="redraw an experiment's plots from its CSV files",
        description=__doc__.split("\n\n", 1)[1])
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                        help="result directory (results/<experiment>/<timestamp>)")
    parser.set_defaults(func=run)


def replot(path: Path) -> list[Path]:
    """Redraw the plots of one result directory; returns the PNGs written."""
    params_path = path / PARAMS_FILE
    try:
        record = json.loads(params_path.read_text())
    except FileNotFoundError:
        raise ReplotError(f"{path}: no {PARAMS_FILE}: not an experiment's result directory"
                          ) from None
    except (OSError, json.JSONDecodeError) as err:
        raise ReplotError(f"{params_path}: unreadable: {err}") from None
    state = run_state(record)
    if state != "complete":
        raise ReplotError(f"{path}: {state}: the run did not complete (status {state!r}"
                          f"{': ' + record['error'] if record.get('error') else ''}); its CSV "
                          f"files may be missing or partial")
    name = record.get("experiment")
    if name == "demo":  # `fabric-lab demo` is not a registered experiment; its plot is its own
        from experiments.demo.plot import plot_timeline

        try:
            return [plot_timeline(ResultDir(path))]
        except FileNotFoundError as err:
            raise ReplotError(f"{path}: demo needs {Path(err.filename).name}, which is "
                              f"missing") from None
    try:
        experiment = get(str(name))
    except KeyError as err:
        raise ReplotError(f"{path}: {err.args[0]}") from None
    try:
        return experiment.plot(ResultDir(path))
    except FileNotFoundError as err:
        raise ReplotError(f"{path}: {name} needs {Path(err.filename).name}, which is "
                          f"missing") from None


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.dirs:
        try:
            plots = replot(path)
        except ReplotError as err:
            print(f"fabric-lab replot: {err}", file=sys.stderr)
            status = 1
            continue
        print(f"{path}: {len(plots)} plot(s): {', '.join(p.name for p in plots)}")
    return status
