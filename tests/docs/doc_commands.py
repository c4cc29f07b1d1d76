"""Commands, file references and P4 names found in the lab's Markdown pages.

`extract(path)` returns every `fabric-lab`, `p4switch*` and `make` command a page shows, in code
blocks (sh/console/plain) and in inline code, as argv lists with placeholders (`FABRIC`, `N`,
`DIR`, `a|b` alternatives, `[optional]` brackets, `...`) replaced by sample values. CLI lines
(`fabric> ...`, `mininet> ...`) and Python blocks are not commands.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = ("fabric-lab", "p4switch", "p4switch-compile", "p4switch-stf", "p4switch-cli", "make")
REPO_DIRS = ("p4src", "p4switch", "topos", "traffic", "controller", "experiments", "fabric_lab",
             "docs", "bench", "scripts", "tests", "labs")
SHELL_BLOCKS = ("", "sh", "bash", "console", "shell", "text")
CLI_PROMPTS = ("fabric>", "mininet>", "RuntimeCmd:")  # lines typed at a CLI, not a shell

# Placeholders the pages use, and the sample value each stands for.
PLACEHOLDERS = {
    "FABRIC": "hpn7", "EXPERIMENT": "lb-compare", "N": "1", "DIR": "/tmp/fabric-lab-docs",
    "FILE": "p4src/ecmp.p4", "MODE": "dlb", "CMD": "true", "US": "20000", "GAP_US": "20000",
    "LIST": "localhost", "PERCENT": "30", "KIND": "uplink", "P4C_CHECKOUT": "/tmp/p4c",
}


@dataclass(frozen=True)
class DocCommand:
    page: str  # path relative to the repository
    line: int
    text: str  # as written
    argv: tuple[str, ...]  # normalised, argv[0] one of PROGRAMS
    inline: bool  # inline code: may be a fragment (a flag of a command named without its operands)

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def doc_pages() -> list[Path]:
    """README.md, CONTRIBUTING.md, docs/**, labs/** and the package READMEs."""
    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md"]
    for folder in ("docs", "labs"):
        pages += sorted((REPO / folder).rglob("*.md"))
    for package in ("topos", "traffic", "p4switch/switch", "p4switch/runtime"):
        pages.append(REPO / package / "README.md")
    return [page for page in pages if page.is_file()]


def split_page(text: str) -> tuple[list[tuple[int, str, str]], list[tuple[int, str]]]:
    """(code-block lines as (line number, language, text), prose lines as (line number, text))."""
    blocks: list[tuple[int, str, str]] = []
    prose: list[tuple[int, str]] = []
    language: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"\s*```\s*([\w+-]*)", line)
        if fence:
            language = None if language is not None else fence.group(1).lower()
            continue
        if language is None:
            prose.append((number, line))
        else:
            blocks.append((number, language, line))
    return blocks, prose


def normalise(tokens: list[str]) -> list[str]:
    """Placeholders to sample values; `[`/`]` of optional parts, `...` and `a|b` alternatives."""
    out: list[str] = []
    for token in tokens:
        if token in ("...", "…") or token.endswith("…"):
            continue
        token = token.removeprefix("[").removesuffix("]")
        if not token or token in ("key=value", "K=V"):  # a placeholder for any parameter
            continue
        if "|" in token and "://" not in token:
            token = token.split("|", 1)[0]
        if "=" in token and not token.startswith("-"):
            key, _, value = token.partition("=")
            token = f"{key}={PLACEHOLDERS.get(value, value)}"
        out.append(PLACEHOLDERS.get(token, token))
    return out


def commands_in(tokens: list[str]) -> list[list[str]]:
    """The commands of one shell line: split at | && ; and strip sudo, flock LOCK, VAR=value."""
    found: list[list[str]] = []
    current: list[str] = []
    for token in [*tokens, ";"]:
        if token not in ("|", "||", "&&", ";"):
            current.append(token)
            continue
        argv = current
        current = []
        while argv:
            if argv[0] in ("sudo", "env", "exec", "time"):
                argv = argv[1:]
            elif argv[0] == "flock" and len(argv) > 1:
                argv = argv[2:]
            elif re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", argv[0]):
                argv = argv[1:]
            else:
                break
        if argv and Path(argv[0]).name in PROGRAMS:
            found.append([Path(argv[0]).name, *argv[1:]])
    return found


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote: not a shell line
        return None


def extract(page: Path) -> list[DocCommand]:
    rel = str(page.relative_to(REPO)) if page.is_relative_to(REPO) else str(page)
    blocks, prose = split_page(page.read_text())
    found: list[DocCommand] = []
    pending, start = "", 0
    for number, language, line in blocks:
        if language not in SHELL_BLOCKS:
            continue
        stripped = line.strip()
        if not pending:
            start = number
            if stripped.startswith(CLI_PROMPTS):
                continue
            stripped = stripped.removeprefix("$ ").removeprefix("# ")
        pending += stripped
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        tokens = _split(pending)
        for argv in commands_in(normalise(tokens)) if tokens else []:
            found.append(DocCommand(rel, start, pending.strip(), tuple(argv), inline=False))
        pending = ""
    for number, line in prose:
        for span in re.findall(r"`([^`]+)`", line):
            tokens = _split(span)
            if not tokens or Path(tokens[0]).name not in (*PROGRAMS, "sudo"):
                continue
            for argv in commands_in(normalise(tokens)):
                if len(argv) > 1:  # a bare program name is prose, not a command
                    found.append(DocCommand(rel, number, span, tuple(argv), inline=True))
    return found


def mininet_lines(page: Path, prompt: str = "fabric>") -> list[tuple[int, list[str]]]:
    """(line, argv) of every `fabric> ...` line (the CLI of `fabric-lab up`) in a page's code
    blocks; `prompt="mininet>"` finds lines that show Mininet's own prompt instead."""
    blocks, _ = split_page(page.read_text())
    found = []
    for number, _language, line in blocks:
        text = line.strip()
        if text.startswith(prompt):
            tokens = _split(text.removeprefix(prompt))
            if tokens:
                found.append((number, tokens))
    return found


def all_commands() -> list[DocCommand]:
    return [command for page in doc_pages() for command in extract(page)]


def inline_spans(page: Path) -> list[tuple[int, str, bool]]:
    """(line, text, is a link) of every inline code span and link target in a page's prose."""
    _, prose = split_page(page.read_text())
    spans: list[tuple[int, str, bool]] = []
    for number, line in prose:
        spans += [(number, span, False) for span in re.findall(r"`([^`]+)`", line)]
        spans += [(number, target, True) for target in re.findall(r"\]\(([^)\s]+)\)", line)]
    return spans


def page_text_lines(page: Path) -> list[tuple[int, str]]:
    return list(enumerate(page.read_text().splitlines(), start=1))
