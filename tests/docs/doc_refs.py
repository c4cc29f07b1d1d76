"""Repository paths, `file:line` citations and Markdown files a page refers to, checked."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.doc_commands import REPO, REPO_DIRS, inline_spans, page_text_lines

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
