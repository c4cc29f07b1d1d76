"""Every figure's run is as new as the code it measures: each shipped example and each page
table declared in fabric_lab/figures.py has a record of the sources it ran (`make
docs-figures` writes them), and no source under the record's paths has changed since. A page
gives its table's date on the line that links the record."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from fabric_lab.figures import RUNS, TABLES, Table, example_record
from fabric_lab.measured import imported_sources, source_digests, sources_record, stale_files
from tests.docs.doc_commands import REPO

pytestmark = pytest.mark.skipif(source_digests(["fabric_lab"]) is None,
                                reason="not a git checkout: no tracked files to compare")


def _load(path):
    assert path.is_file(), f"{path.relative_to(REPO)} is missing: run `make docs-figures`"
    return json.loads(path.read_text())


def _fresh(record: dict, what: str, rerun: str) -> None:
    stale = stale_files(record)
    assert stale is not None
    assert record.get("sources"), f"{what}: no record of the code it ran; rerun {rerun}"
    assert not stale, (f"{what} ran older code than this checkout's ({len(stale)} source files "
                       f"changed since {record.get('date')}: {', '.join(stale[:8])}"
                       f"{' ...' if len(stale) > 8 else ''}); rerun {rerun}")


@pytest.mark.parametrize("experiment", sorted(RUNS))
def test_the_shipped_example_ran_todays_code(experiment):
    record = _load(example_record(experiment))
    assert record["experiment"] == experiment
    _fresh(record, f"examples/results/{experiment}", f"`make figures` (--only {experiment})")


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_a_page_table_ran_todays_code(table: Table):
    record = _load(table.record)
    assert record["table"] == table.name
    assert [run["command"] for run in record["runs"]] == [list(c) for c in table.commands], (
        f"{table.record.name} ran other commands than fabric_lab/figures.py declares")
    _fresh(record, f"{table.page}'s {table.name} table",
           f"`sudo .venv/bin/python scripts/figures.py --tables {table.name}`")


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_a_page_dates_its_table_by_its_record(table: Table):
    """The line that links the record says the record's date (e.g. "2 December 2026")."""
    record = _load(table.record)
    page = (REPO / table.page).read_text()
    link = f"runs/{table.record.name}"
    lines = [line for line in page.splitlines() if link in line]
    assert lines, f"{table.page} does not link {link}"
    day = time.strptime(record["date"], "%Y-%m-%d")
    date = f"{day.tm_mday} {time.strftime('%B %Y', day)}"
    assert all(date in line for line in lines), (
        f"{table.page}: the line linking {link} must give its date, {date}: {lines}")
    for command in table.commands:  # and the page shows each command it ran
        shown = re.sub(r"\s+", " ", table.shown(command))
        assert shown in re.sub(r"\s*\\\n\s*", " ", page), f"{table.page} does not show {shown}"


def test_a_record_names_each_source_changed_added_or_removed_since(tmp_path):
    """A run of lab/run.py imports lab.util (which starts `-m lab.tool`) and a script beside
    it; a page is not a source; a new import is a new source."""
    files = {"lab/__init__.py": "", "lab/run.py": "from lab import util\n",
             "lab/util.py": "import os\nargv = ['python', '-m', 'lab.tool']\n",
             "lab/tool.py": "x = 1\n", "lab/unused.py": "y = 1\n", "lab/fast.c": "int b;\n",
             "lab/notes.md": "n\n", "p4src/a.p4": "control c() { apply {} }\n",
             "bench/go.py": "from helper import f\n", "bench/helper.py": "import lab.tool\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    assert imported_sources(["lab.run"], tmp_path) == [
        "lab/__init__.py", "lab/fast.c", "lab/run.py", "lab/tool.py", "lab/util.py", "p4src"]
    assert imported_sources(["bench/go.py"], tmp_path) == [
        "bench/go.py", "bench/helper.py", "lab/__init__.py", "lab/fast.c", "lab/tool.py",
        "p4src"]
    record = {"roots": ["lab.run"],
              "sources": source_digests(imported_sources(["lab.run"], tmp_path), tmp_path)}
    assert set(record["sources"]) == {"lab/__init__.py", "lab/fast.c", "lab/run.py",
                                      "lab/tool.py", "lab/util.py", "p4src/a.p4"}
    assert stale_files(record, tmp_path) == []
    (tmp_path / "lab/notes.md").write_text("changed\n")
    (tmp_path / "lab/unused.py").write_text("y = 2\n")
    assert stale_files(record, tmp_path) == []
    (tmp_path / "lab/tool.py").write_text("x = 2\n")
    (tmp_path / "lab/fast.c").unlink()
    (tmp_path / "lab/run.py").write_text("from lab import util, unused\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    assert stale_files(record, tmp_path) == ["lab/fast.c (gone)", "lab/run.py (changed)",
                                             "lab/tool.py (changed)", "lab/unused.py (new)"]
    assert set(sources_record(["fabric_lab.measured"])) >= {"date", "machine", "revision",
                                                            "roots", "sources"}


def test_the_readme_dates_a_headline_figure_by_its_tables_record():
    """A headline row whose command is one a declared table ran gives that record's date."""
    readme = (REPO / "README.md").read_text()
    checked = 0
    for table in TABLES:
        record = _load(table.record)
        day = time.strptime(record["date"], "%Y-%m-%d")
        date = f"{day.tm_mday} {time.strftime('%b %Y', day)}"
        for command in table.commands:
            shown = table.shown(command)
            for row in (line for line in readme.splitlines() if f"{shown}`" in line):
                assert row.rstrip().rstrip("|").strip().endswith(date), (
                    f"README's row for `{shown}` must be dated {date} (its record's): {row}")
                checked += 1
    assert checked, "no headline row names a declared table's command"
