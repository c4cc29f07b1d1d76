"""What the pages name must exist on a user's machine, and docs/README.md must index every page.

- No page (README.md, CONTRIBUTING.md, docs/, labs/, the package READMEs) and no benchmark or
  script names a path outside the repository: an absolute path other than the standard system
  directories (a folder beside the checkout on the machine it was written on, a home directory),
  or a `../` path that leaves the repository or names `../shared`.
- docs/README.md links to every page under docs/.
"""

from __future__ import annotations

from pathlib import Path

from tests.docs.doc_commands import REPO, doc_pages
from tests.docs.doc_refs import index_misses, outside_paths

DOCS_INDEX = REPO / "docs" / "README.md"


def test_no_page_names_a_path_outside_the_repository() -> None:
    pages = doc_pages()
    assert {REPO / "README.md", REPO / "CONTRIBUTING.md", DOCS_INDEX} <= set(pages)
    problems = [problem for page in pages for problem in outside_paths(page)]
    assert not problems, "\n".join(problems)


def test_no_benchmark_or_script_names_a_path_outside_the_repository() -> None:
    files = sorted(REPO.glob("bench/*.py")) + sorted(p for p in REPO.glob("scripts/*") if p.is_file())
    assert REPO / "bench" / "fabric_capacity.py" in files and REPO / "scripts" / "build_p4lang.sh" in files
    problems = [problem for path in files for problem in outside_paths(path)]
    assert not problems, "\n".join(problems)


def test_outside_paths_are_found_and_system_paths_pass() -> None:
    page = REPO / "docs" / "example.md"  # never written: its text is given
    text = ("source /work/shared/p4lang/env.sh\n"  # a folder of one machine
            "    ../shared/p4lang/env.sh beside the checkout\n"
            "see [x](../../elsewhere/notes.md) and `/home/alice/fabric`\n"
            "installs into /usr/local/bin; caches in ~/.cache/p4switch; `cd /vagrant`\n"
            "logs in /tmp/logs/, /proc/net/dev, /sys/class/net, http://127.0.0.1:8700/api/state\n"
            "`/api/stream`; 1/2 of the Mb/s; A50%/B50%; results/<timestamp>/timeline.png\n"
            "[rates](../docs/rates.md), [lab 5](../labs/05-pfc/README.md), \"$repo\"/p4src/*.p4\n")
    problems = outside_paths(page, text)
    found = {problem.split(": ", 1)[1].split(" is ", 1)[0] for problem in problems}
    assert found == {"/work/shared/p4lang/env.sh", "../shared/p4lang/env.sh",
                     "../../elsewhere/notes.md", "/home/alice/fabric"}, problems
    assert all(problem.startswith("docs/example.md:") for problem in problems), problems
    lines = sorted(int(problem.split(":")[1]) for problem in problems)
    assert lines == [1, 2, 3, 3], problems


def test_the_docs_index_lists_every_page_under_docs() -> None:
    pages = sorted(page.relative_to(DOCS_INDEX.parent) for page in DOCS_INDEX.parent.rglob("*.md"))
    assert Path("rates.md") in pages and Path("fabrics/fattree.md") in pages, pages
    missing = index_misses(DOCS_INDEX)
    assert not missing, f"docs/README.md does not link to: {', '.join(missing)}"


def test_an_index_that_misses_a_page_is_caught(tmp_path: Path) -> None:
    (tmp_path / "fabrics").mkdir()
    for name in ("rates.md", "fabrics/fattree.md", "fabrics/leafspine.md"):
        (tmp_path / name).write_text(f"# {name}\n")
    index = tmp_path / "README.md"
    index.write_text("[Rates](rates.md), [leaf-spine](fabrics/leafspine.md#exercises)\n"
                     "```\n[in a code block](fabrics/fattree.md)\n```\n")
    assert index_misses(index) == ["fabrics/fattree.md"]
