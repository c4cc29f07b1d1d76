"""`fabric-lab replot DIR`: redraw an experiment's plots from the CSV files of its result directory.

The experiment is the one params.json names; its `plot` reads only the directory's CSV files (and
params.json), so this needs no root, no switches and no rerun. The PNGs are drawn again in place,
whatever the run's own plot step did: after changing a plot's code, on a machine the results were
copied to, after a plot step that failed (a full disk), or from the rows an interrupted or
failed run measured before it stopped (said so). Only a directory without CSV files is refused.
Exit status: 0 drawn, 1 a plot failed, 2 not a result directory or nothing to draw from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from experiments.framework.registry import get
from experiments.framework.results import PARAMS_FILE, ResultDir, run_state
from topos.errors import FabricLabError, InputError


class ReplotError(InputError):
    """A directory there is nothing to draw from: not a result, no CSV files, a file missing."""


class ReplotFailed(FabricLabError):
    """The experiment's plot code failed on the directory's CSV files."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replot", help="redraw an experiment's plots from its CSV files",
        description=__doc__.split("\n\n", 1)[1])
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                        help="result directory (results/<experiment>/<timestamp>)")
    parser.set_defaults(func=run)


def read_record(path: Path) -> dict:
    """The run's params.json."""
    params_path = path / PARAMS_FILE
    try:
        record = json.loads(params_path.read_text())
    except FileNotFoundError:
        raise ReplotError(f"{path}: no {PARAMS_FILE}: not an experiment's result directory"
                          ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReplotError(f"{params_path}: unreadable: {err}") from None
    if not isinstance(record, dict):
        raise ReplotError(f"{params_path}: not a run's record (a JSON object)")
    return record


def replot(path: Path) -> tuple[list[Path], str]:
    """Redraw the plots of one result directory: the PNGs written, and what the run's state
    means for them ("" for a complete run)."""
    record = read_record(path)
    state = run_state(record)
    if not any(path.glob("*.csv")):
        raise ReplotError(f"{path}: no CSV files: nothing was measured to draw from "
                          f"(the run is {state})")
    name = record.get("experiment")
    result = ResultDir(path)
    try:
        if name == "demo":  # `fabric-lab demo` is not a registered experiment; its plot is its own
            from experiments.demo.plot import plot_timeline

            plots = [plot_timeline(result)]
        else:
            try:
                experiment = get(str(name))
            except KeyError as err:
                raise ReplotError(f"{path}: {err.args[0]}") from None
            plots = experiment.plot(result)
    except FileNotFoundError as err:
        raise ReplotError(f"{path}: {name} needs {Path(err.filename).name}, which is missing"
                          f"{'' if state == 'complete' else f' (the run is {state})'}") from None
    except FabricLabError:
        raise
    except Exception as err:  # the plot code on these rows: one line, with what it said
        raise ReplotFailed(f"{path}: plotting {name} failed: {type(err).__name__}: {err}"
                           f"{'' if state == 'complete' else f' (the run is {state})'}") from None
    if state == "complete" and "plot_error" in record:  # the run's own plot step had failed
        record.pop("plot_error")
        record["plots"] = [plot.name for plot in plots]
        with contextlib.suppress(OSError):  # a copy we may not write: the plots are there
            result.write_json(PARAMS_FILE, record)
    note = "" if state == "complete" else (
        f"{state}: drawn from the rows measured before the run stopped"
        if state != "running" else "still running: drawn from the rows measured so far")
    return plots, note


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.dirs:
        try:
            plots, note = replot(path)
        except FabricLabError as err:
            print(f"fabric-lab replot: {err}", file=sys.stderr)
            status = max(status, err.exit_status)
            continue
        print(f"{path}: {len(plots)} plot(s): {', '.join(p.name for p in plots)}"
              f"{f' ({note})' if note else ''}")
    return status
