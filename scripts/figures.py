"""`make figures`: rerun the `--quick` runs behind the pages' figures, check that each figure still
shows what its page claims, and install the figures (docs/images/) and the runs (the shipped
examples, examples/results/<experiment>/quick/).

    python scripts/figures.py                  # every run (root: most start Mininet fabrics)
    python scripts/figures.py --only incast    # one run and its figures
    python scripts/figures.py --from results/  # no run: the newest complete run of each
    python scripts/figures.py --check          # no run, nothing installed: the shipped examples
    python scripts/figures.py --tables         # the benchmarks behind the pages' tables (root)

The figures, their runs, pages and claims are declared in fabric_lab/figures.py, with the pages'
benchmark tables. Every installed run and every table's benchmark output gets a record of the
code it measured (fabric_lab/measured.py), which tests/docs compares with the checkout. A run whose
claims do not all hold installs nothing (the shipped figures stay); the exit status is 1 when a
run failed or a claim does not hold.
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from experiments.framework.report import find_runs
from experiments.framework.results import ResultDir, run_state
from fabric_lab.figures import (
    EXAMPLES,
    FIGURES,
    REPO,
    RUNS,
    TABLES,
    Figure,
    Table,
    example_record,
    example_run,
    verify,
)
from fabric_lab.measured import sources_record, write_record

DPI = 90  # the installed PNGs: drawn at the plots' own dpi, scaled to this, a palette of colours
MAX_BYTES = 120_000  # a busier plot gets fewer colours, then a lower dpi, until it fits
TRIES = ((DPI, 128), (DPI, 48), (75, 48))


def shrink_png(source: Path, target: Path) -> Path:
    """`source` scaled from its own dpi and reduced to a palette, written to `target`: the first
    of TRIES (dpi, colours) under MAX_BYTES, else the last."""
    with Image.open(source) as image:
        drawn_dpi = float(image.info.get("dpi", (DPI, DPI))[0])
        rgb = image.convert("RGB")
    data = b""
    for dpi, colours in TRIES:
        scale = min(1.0, dpi / drawn_dpi)
        small = rgb.resize((round(rgb.width * scale), round(rgb.height * scale)),
                           Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        small.quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(
            buffer, "PNG", optimize=True, dpi=(dpi, dpi))
        data = buffer.getvalue()
        if len(data) <= MAX_BYTES:
            break
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def install_example(run: ResultDir, experiment: str) -> Path:
    """Copy `run` (its CSV files, params.json and shrunk plots; not its logs) as the shipped
    example of `experiment`, replacing the former one."""
    target = example_run(experiment).path
    staging = target.with_name(f".{target.name}.new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for item in sorted(run.path.iterdir()):
        if item.is_dir() or item.name.startswith("."):
            continue
        if item.suffix == ".png":
            shrink_png(item, staging / item.name)
        else:
            shutil.copyfile(item, staging / item.name)
    shutil.rmtree(target, ignore_errors=True)
    staging.replace(target)
    return target


def newest_complete(results: Path, experiment: str) -> ResultDir | None:
    for path in find_runs(results):
        run = ResultDir(path)
        record = run.read_params()
        if record.get("experiment") == experiment and run_state(record) == "complete":
            return run
    return None


def execute(experiment: str, work: Path) -> tuple[ResultDir | None, str]:
    """Run `experiment`'s declared --quick run into `work`; (its result or None, a note)."""
    out = work / experiment
    argv = [sys.executable, "-m", "fabric_lab.cli", *RUNS[experiment].argv(), "--out", str(out)]
    started = time.monotonic()
    log = work / f"{experiment}.log"
    with log.open("w") as handle:
        done = subprocess.run(argv, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT)
    took = f"{time.monotonic() - started:.0f} s"
    if done.returncode != 0:
        tail = "".join(f"\n    {line}" for line in log.read_text().splitlines()[-8:])
        return None, f"FAILED (exit {done.returncode}, {took}; log {log}):{tail}"
    return ResultDir(out), took


def measure_table(table: Table) -> bool:
    """Run `table`'s commands in turn, their output shown as it comes, and record it with the
    code it measured; a failed command records nothing."""
    outputs = []
    for command in table.commands:
        print(f"{table.name}: {table.shown(command)}", flush=True)
        done = subprocess.Popen([sys.executable, *command], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        assert done.stdout is not None
        lines = []
        for line in done.stdout:
            sys.stdout.write(line)
            lines.append(line)
        if done.wait() != 0:
            print(f"{table.name}: FAILED (exit {done.returncode}): nothing recorded")
            return False
        outputs.append({"command": list(command), "output": "".join(lines)})
    record = write_record(table.record, sources_record(table.roots, table=table.name,
                                                       page=table.page, runs=outputs))
    print(f"{table.name}: recorded {record.relative_to(REPO)}; transcribe it into {table.page}")
    return True


def report_claims(figures: list[Figure], run: ResultDir) -> bool:
    holds = True
    for figure in figures:
        ok, measured = verify(figure, run)
        holds &= ok
        print(f"  [{'HOLDS' if ok else 'FAILS'}] {figure.name}: {figure.claim}\n"
              f"          measured: {measured}")
    return holds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(RUNS), metavar="EXPERIMENT",
                        help=f"these runs only (of {', '.join(RUNS)})")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--from", dest="results", type=Path,
                        help="take the newest complete run of each experiment under this "
                             "results directory instead of running")
    source.add_argument("--check", action="store_true",
                        help="check the shipped examples' claims only: run and install nothing")
    source.add_argument("--tables", nargs="*", choices=[t.name for t in TABLES], metavar="TABLE",
                        help="rerun the benchmarks behind these pages' tables (default: all of "
                             f"{', '.join(t.name for t in TABLES)}) and record their output")
    parser.add_argument("--work", type=Path,
                        help="where the runs go (default: a new directory under /tmp)")
    args = parser.parse_args(argv)
    if args.tables is not None:
        tables = [t for t in TABLES if not args.tables or t.name in args.tables]
        failed_tables = [t.name for t in tables if not measure_table(t)]
        print(f"tables: {len(tables) - len(failed_tables)}/{len(tables)} recorded"
              f"{': failed ' + ', '.join(failed_tables) if failed_tables else ''}")
        return 1 if failed_tables else 0
    experiments = args.only or list(RUNS)
    work = None
    if not (args.check or args.results):
        work = args.work or Path(tempfile.mkdtemp(prefix="fabric-lab-figures-"))
        work.mkdir(parents=True, exist_ok=True)
        print(f"figures: {len(experiments)} run(s) into {work}")
    failed = []
    for experiment in experiments:
        figures = [f for f in FIGURES if f.run == experiment]
        run: ResultDir | None
        if args.check:
            run = example_run(experiment)
            note = f"shipped example {run.path.relative_to(REPO)}"
        elif args.results:
            run = newest_complete(args.results, experiment)
            note = str(run.path) if run else f"no complete run under {args.results}"
        else:
            assert work is not None
            print(f"{experiment}: fabric-lab {' '.join(RUNS[experiment].argv())} ...", flush=True)
            run, note = execute(experiment, work)
        print(f"{experiment}: {note}")
        if run is None:
            failed.append(experiment)
            continue
        if not report_claims(figures, run):
            failed.append(experiment)
            if not args.check:
                print(f"  not installed: the figures of {experiment} stay as they were")
            continue
        if args.check:
            continue
        example = install_example(run, experiment)
        params = run.read_params()
        record = sources_record(RUNS[experiment].roots, experiment=experiment,
                                run_revision=params.get("git_revision", ""),
                                run_created=params.get("created", ""))
        if args.results and params.get("git_revision") != record["revision"]:
            record["sources"] = {}  # a run of other code than this checkout's: not known
            print(f"  {run.path} ran {params.get('git_revision') or 'unknown code'}, not this "
                  f"checkout's {record['revision']}: recorded as stale")
        write_record(example_record(experiment), record)
        for figure in figures:
            shrink_png(run.path / figure.plot, figure.path)
        print(f"  installed {', '.join(str(f.path.relative_to(REPO)) for f in figures)} and "
              f"{example.relative_to(REPO)}")
    total = sum(path.stat().st_size for path in EXAMPLES.rglob("*") if path.is_file())
    print(f"figures: {len(experiments) - len(failed)}/{len(experiments)} run(s) hold every "
          f"claim{': failed ' + ', '.join(failed) if failed else ''}; shipped examples "
          f"{total / 1e6:.2f} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
