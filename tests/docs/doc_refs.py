"""Repository paths, `file:line` citations and Markdown files a page refers to, checked; paths
a page names outside the repository; the pages an index does not link to."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.doc_commands import REPO, REPO_DIRS, inline_spans, page_text_lines, split_page

PATH_TOKEN = re.compile(r"^(?:\.\./)*((?:" + "|".join(REPO_DIRS) + r")/[\w./-]*?)(?::(\d+)(?:-(\d+))?)?$")


def _check_path(rel: Path, number: int, span: str, path: Path, first: str | None,
                last: str | None) -> list[str]:
    if not path.exists():
        return [f"{rel}:{number}: `{span}`: no {path.relative_to(REPO)} in the repository"]
    if first:
        lines = len(path.read_text().splitlines())
        if not 1 <= int(first) <= int(last or first) <= lines:
            return [f"{rel}:{number}: `{span}`: {path.relative_to(REPO)} has {lines} lines"]
    return []


def path_problems(page: Path) -> list[str]:
    """Repository paths (`p4src/...`, `file:line`) in inline code and the targets of relative links."""
    problems = []
    rel = page.relative_to(REPO)
    for number, span, is_link in inline_spans(page):
        target = span.split("#", 1)[0]
        if not target or re.match(r"[a-z]+:", target) or "<" in target or "*" in target:
            continue
        match = PATH_TOKEN.match(target)
        if match and not target.startswith("../"):
            problems += _check_path(rel, number, span, REPO / match.group(1), match.group(2),
                                    match.group(3))
        elif (is_link or target.startswith("../")) and re.fullmatch(r"[\w./:-]+", target):
            path_part, _, lines = target.partition(":")
            first, _, last = lines.partition("-")
            path = (page.parent / path_part).resolve()
            if path.is_relative_to(REPO):
                problems += _check_path(rel, number, span, path, first or None, last or None)
    for number, line in page_text_lines(page):
        for cited in re.findall(r"(?<![\w/.-])([\w-]+\.(?:p4|py):\d+)", line):
            problems.append(f"{rel}:{number}: `{cited}`: cite with the path from the repository "
                            "root, so that it can be checked")
        for name in re.findall(r"(?<![\w./-])((?:[\w.-]+/)*[A-Z][A-Z_]+\.md)\b", line):
            if not ((REPO / name).exists() or (page.parent / name).exists()):
                problems.append(f"{rel}:{number}: {name} is not in the repository")
    return problems



# Absolute paths a page may name: the standard directories of every Linux machine, the checkout
# inside the lab VM (the Vagrantfile's synced folder) and the web view's routes. Anything else
# (a home directory, a folder beside the checkout on one machine) does not exist on a user's.
SYSTEM_ROOTS = ("bin", "dev", "etc", "lib", "proc", "run", "sbin", "sys", "tmp", "usr", "var")
VM_CHECKOUT = "vagrant"
WEB_ROUTES = ("api",)
ABSOLUTE = re.compile(r"(?<![\w.~:/<>$%)\]}-])/([A-Za-z_][\w.+-]*)(?:/[\w.+<>*-]*)*")
UPWARD = re.compile(r"(?<![\w.-])((?:\.\./)+[\w.-]+(?:/[\w.<>*-]+)*)")
AFTER_VARIABLE = re.compile(r"\$\{?\w+\}?\"?$")  # "$repo"/p4src: a path under a variable


def outside_paths(path: Path, text: str | None = None) -> list[str]:
    """Paths a file names that are outside the repository: an absolute path that is not a system
    directory, and a `../` path that leaves the repository (from the file's folder) or names
    `../shared`. `text` stands for the file's content when given."""
    rel = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    lines = (text if text is not None else path.read_text()).splitlines()
    allowed = (*SYSTEM_ROOTS, VM_CHECKOUT, *WEB_ROUTES)
    problems = []
    for number, line in enumerate(lines, start=1):
        for match in ABSOLUTE.finditer(line):
            if match.group(1) not in allowed and not AFTER_VARIABLE.search(line[:match.start()]):
                problems.append(f"{rel}:{number}: {match.group(0)} is outside the repository "
                                "(a user's machine has no such path)")
        for match in UPWARD.finditer(line):
            upward = match.group(1)
            inside = (path.parent / upward).resolve().is_relative_to(REPO)
            if not inside or re.search(r"(^|/)\.\./shared(/|$)", upward):
                problems.append(f"{rel}:{number}: {upward} is outside the repository")
    return problems


def index_misses(index: Path) -> list[str]:
    """The Markdown pages in the index's folder and below that the index does not link to,
    relative to that folder."""
    _, prose = split_page(index.read_text())
    linked = {(index.parent / target.split("#", 1)[0]).resolve()
              for _, line in prose for target in re.findall(r"\]\(([^)\s]+)\)", line)}
    return [str(page.relative_to(index.parent)) for page in sorted(index.parent.rglob("*.md"))
            if page != index and page.resolve() not in linked]
