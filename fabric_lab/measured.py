"""What a figure's run measured: the digest of every source file of the code it ran, so a page
can tell when that code has moved on since its figure was made.

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
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = frozenset({".py", ".pyx", ".pxd", ".c", ".h", ".p4"})
# What every experiment runs: the whole lab but its tests, pages, benchmarks and scripts.
LAB_CODE = ("controller", "experiments", "fabric_lab", "jobs", "mechanisms", "p4src", "p4switch",
            "topos", "traffic")


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


def sources_record(paths: Iterable[str], **fields: Any) -> dict[str, Any]:
    """A record of a run made now: `fields`, the date, machine and revision, and the digests of
    the sources under `paths`."""
    paths = list(paths)
    return {**fields, "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "machine": machine(), "revision": revision(), "paths": paths,
            "sources": source_digests(paths) or {}}


def write_record(path: Path, record: Mapping[str, Any]) -> Path:
    """`record` as JSON at `path`, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    partial.replace(path)
    return path


def stale_files(record: Mapping[str, Any], repo: Path = REPO) -> list[str] | None:
    """The files of `record`'s paths that changed since it was made; None outside git."""
    now = source_digests(record.get("paths", ()), repo)
    return None if now is None else changed_since(record.get("sources", {}), now)
