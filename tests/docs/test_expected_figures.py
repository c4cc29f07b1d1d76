"""The pages' "What you should see" figures (fabric_lab/figures.py) and the shipped examples.

- Every mechanism page and lab handout shows a figure; every figure a page shows is declared with
  its run and claim; every declared figure is on the pages it names.
- The claims hold on the shipped example runs (examples/results/, from `make figures`), whose
  CSV files the figures were drawn from.
- `fabric-lab report` on a checkout without results shows the examples, and `fabric-lab replot`
  redraws an example run.
No network: `make figures` (scripts/figures.py) is what reruns the experiments.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from experiments.framework.results import run_state
from fabric_lab.figures import EXAMPLES, FIGURES, IMAGES, REPO, RUNS, example_run, verify

MECHANISMS = ("ecmp", "flowlet", "dlb", "ecn", "pfc", "failover", "pfc-deadlock")
PAGES = ([f"docs/mechanisms/{name}.md" for name in MECHANISMS]
         + sorted(str(p.relative_to(REPO)) for p in (REPO / "labs").glob("0[0-9]-*/README.md")))
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")
MAX_FIGURE_BYTES = 150_000
MAX_EXAMPLES_BYTES = 2_000_000


def images_on(page: str) -> set[Path]:
    path = REPO / page
    return {(path.parent / link).resolve() for link in IMAGE.findall(path.read_text())}


def test_every_page_shows_a_declared_figure_and_every_figure_is_on_its_pages():
    assert len(PAGES) == len(MECHANISMS) + 10, PAGES
    declared = {figure.path: figure for figure in FIGURES}
    assert len(declared) == len(FIGURES), "two figures installed under one name"
    problems = []
    for page in PAGES:
        shown = images_on(page)
        if not shown & set(declared):
            problems.append(f"{page}: shows no declared figure")
        problems += [f"{page}: shows {image.relative_to(REPO)}, which fabric_lab/figures.py "
                     f"does not declare" for image in shown
                     if image.parent == IMAGES and image not in declared]
    for figure in FIGURES:
        if not figure.path.is_file():
            problems.append(f"{figure.name}: no {figure.path.relative_to(REPO)} (make figures)")
        elif figure.path.stat().st_size > MAX_FIGURE_BYTES:
            problems.append(f"{figure.name}: {figure.path.stat().st_size} bytes")
        if figure.run not in RUNS:
            problems.append(f"{figure.name}: no run of {figure.run} declared")
        problems += [f"{figure.name}: not shown on {page}" for page in figure.pages
                     if figure.path not in images_on(page)]
        unlisted = [page for page in PAGES if figure.path in images_on(page)
                    and page not in figure.pages]
        problems += [f"{figure.name}: shown on {page}, which it does not list"
                     for page in unlisted]
    assert not problems, "\n".join(problems)


def test_the_claims_hold_on_the_shipped_examples():
    problems = []
    for figure in FIGURES:
        run = example_run(figure.run)
        record = run.read_params()
        assert record["experiment"] == figure.run and record["quick"] is True
        assert run_state(record) == "complete", run.path
        assert (run.path / figure.plot).is_file(), f"{run.path} has no {figure.plot}"
        holds, measured = verify(figure, run)
        if not holds:
            problems.append(f"{figure.name}: {figure.claim}; measured: {measured}")
    assert not problems, "\n".join(problems)
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()) == sorted(RUNS)
    size = sum(p.stat().st_size for p in EXAMPLES.rglob("*") if p.is_file())
    assert size < MAX_EXAMPLES_BYTES, size


def test_a_claim_fails_on_a_run_that_no_longer_shows_it(tmp_path: Path):
    """The checks read the numbers: the ECN claim on a copy whose ECN row dropped as much as the
    row without ECN fails, and a missing CSV fails with what is missing."""
    figure = next(f for f in FIGURES if f.name == "incast-queues")
    shutil.copytree(example_run(figure.run).path, tmp_path / "run")
    summary = tmp_path / "run" / "summary.csv"
    lines = summary.read_text().splitlines()
    header = lines[0].split(",")
    rows = [line.split(",") for line in lines[1:]]
    none = next(r for r in rows if r[0] == "none")
    for row in rows:
        if row[0] == "ecn":
            row[header.index("drops_congested")] = none[header.index("drops_congested")]
    summary.write_text("\n".join(",".join(r) for r in [header, *rows]) + "\n")
    from experiments.framework.results import ResultDir

    holds, measured = verify(figure, ResultDir(tmp_path / "run"))
    assert not holds and "drops at the congested port" in measured
    summary.unlink()
    holds, measured = verify(figure, ResultDir(tmp_path / "run"))
    assert not holds and "summary.csv" in measured


def fabric_lab(*argv: str) -> int:
    """`fabric-lab ARGV` with only its own subcommand registered (the whole CLI imports every
    command's dependencies: seconds this test does not need)."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(prog="fabric-lab")
    importlib.import_module(f"fabric_lab.commands.{argv[0]}").register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def test_report_on_a_checkout_without_results_shows_the_examples(tmp_path: Path, monkeypatch,
                                                                  capsys):
    monkeypatch.chdir(tmp_path)  # no results/ here, as in a fresh checkout
    assert fabric_lab("report") == 0
    printed = capsys.readouterr().out
    plots = sum(1 for _ in EXAMPLES.rglob("*.png"))
    assert "shipped examples" in printed
    assert f"wrote results/report.html ({plots} plot(s))" in printed, printed
    page = (tmp_path / "results" / "report.html").read_text()
    assert page.count("<img ") == plots
    assert "fabric None" not in page
    lb_compare = page.split("<h2>lb-compare</h2>", 1)[1].split("<h2>", 1)[0]
    assert " · fabric leafspine · " in lb_compare
    assert not (EXAMPLES / "report.html").exists()


def test_replot_redraws_an_example_run(tmp_path: Path, capsys):
    run = tmp_path / "lb-compare"
    shutil.copytree(example_run("lb-compare").path, run)
    for png in run.glob("*.png"):
        png.unlink()
    assert fabric_lab("replot", str(run)) == 0, capsys.readouterr().err
    drawn = sorted(p.name for p in run.glob("*.png"))
    assert drawn == sorted(example_run("lb-compare").read_params()["plots"])
