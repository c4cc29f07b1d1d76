"""What a figure's run measured: the digest of every source file of the code it ran, so a page
can tell when that code has moved on since its figure was made.

What a run measured is the code it imports: `imported_sources` follows every import statement
of the repository's packages from a module or script (nested ones too; `importlib` calls are not
followed, so an experiment's run is the experiment's module and `fabric-lab run`, not every
other experiment), with the C and Cython sources and the P4 programs the Python drives.

A record is written beside the run (a shipped example's `sources.json`, a page table's
`docs/runs/<name>.json`) by `make docs-figures`; tests/docs compares it with the files of the
checkout and names every file changed, added or removed since. The files are the ones git tracks
under the record's paths, with a source suffix: a change to a page or a test moves nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = frozenset({".py", ".pyx", ".pxd", ".c", ".h", ".p4"})
NATIVE_SUFFIXES = (".c", ".h", ".pyx", ".pxd")
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(?P<module>[.\w]+)[ \t]+import[ \t]+"
                     r"(?P<names>\([^)]*\)|[^\n#]*)|import[ \t]+(?P<plain>[^\n#]*))",
                     re.MULTILINE)
_STARTED = re.compile(r"""["']-m["'],\s*["']([\w.]+)["']""")  # [python, "-m", "traffic"]
PROGRAMS = "p4src"  # every run loads P4 programs


def _module_file(name: str, repo: Path) -> Path | None:
    base = repo.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_sources(roots: Iterable[str], repo: Path = REPO) -> list[str]:
    """The repository's source files that `roots` (module names or script paths) import or
    start (`-m module`), transitively, with the native sources of every package they reach and
    the P4 programs; relative to `repo`, sorted. Lines are read as text: an `import` line in a
    docstring counts too; a script's siblings resolve beside it (bench/ is no package)."""
    pending = [repo / r if r.endswith(".py") else _module_file(r, repo) for r in roots]
    seen: set[Path] = set()
    while pending:
        path = pending.pop()
        if path is None or path in seen:
            continue
        seen.add(path)
        package = ".".join(path.relative_to(repo).with_suffix("").parts)
        if path.name == "__init__.py":
            package += ".__init__"
        text = path.read_text(errors="replace")
        if not (path.parent / "__init__.py").is_file():  # a script: its siblings import too
            pending += [path.parent / f"{m}.py" for m in re.findall(r"^\s*from\s+(\w+)\s+import",
                                                                   text, re.MULTILINE)
                        if (path.parent / f"{m}.py").is_file()]
        pending += [_module_file(m, repo) for m in _STARTED.findall(text)]
        for match in _IMPORT.finditer(text):
            if match["module"] is not None:
                dots = len(match["module"]) - len(match["module"].lstrip("."))
                base = match["module"].lstrip(".")
                if dots:
                    base = ".".join([*package.split(".")[:-dots], *filter(None, [base])])
                listed = match["names"].strip("()").replace("\\", " ")
                names = [base, *(f"{base}.{n.split()[0]}" for n in listed.split(",") if n.split())]
            else:
                names = [n.split()[0] for n in match["plain"].split(",") if n.split()]
            for name in names:  # a module, or a name in one, and the packages above it
                parts = name.split(".")
                pending += [_module_file(".".join(parts[:k]), repo)
                            for k in range(1, len(parts) + 1)]
    files = {p.relative_to(repo).as_posix() for p in seen}
    for top in {f.split("/")[0] for f in files if "/" in f}:
        files.update(p.relative_to(repo).as_posix() for p in (repo / top).rglob("*")
                     if p.suffix in NATIVE_SUFFIXES)
    return sorted(files | {PROGRAMS})


def source_digests(paths: Iterable[str], repo: Path = REPO) -> dict[str, str] | None:
    """{file: sha256 prefix} of the tracked source files under `paths` (as the working tree has
    them); None outside a git checkout (a tarball: nothing to compare against)."""
    try:
        listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--", *paths],
                                capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    digests = {}
    for name in sorted(filter(None, listed.decode().split("\0"))):
        path = repo / name
        if Path(name).suffix in SOURCE_SUFFIXES and path.is_file():
            digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return digests


def changed_since(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """The files that differ between a record's digests and today's: "FILE (changed|new|gone)"."""
    out = [f"{name} ({'changed' if name in recorded else 'new'})"
           for name, digest in now.items() if recorded.get(name) != digest]
    return sorted(out + [f"{name} (gone)" for name in recorded if name not in now])


def revision(repo: Path = REPO) -> str:
    """The checkout's commit, "-dirty" when its tracked files differ from it; "" outside git."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("-dirty" if dirty else "")


def machine() -> str:
    """One line on where a figure was measured."""
    return f"{os.cpu_count()} cores, {platform.system()} {platform.release()}"


def sources_record(roots: Iterable[str], **fields: Any) -> dict[str, Any]:
    """A record of a run made now from `roots` (modules or scripts): `fields`, the date,
    machine and revision, and the digests of every source `roots` import."""
    roots = list(roots)
    return {**fields, "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "machine": machine(), "revision": revision(), "roots": roots,
            "sources": source_digests(imported_sources(roots)) or {}}


def write_record(path: Path, record: Mapping[str, Any]) -> Path:
    """`record` as JSON at `path`, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    partial.replace(path)
    return path


def stale_files(record: Mapping[str, Any], repo: Path = REPO) -> list[str] | None:
    """The sources of `record`'s roots (as they import today) that changed since it was made;
    None outside git."""
    now = source_digests(imported_sources(record.get("roots", ()), repo), repo)
    return None if now is None else changed_since(record.get("sources", {}), now)
