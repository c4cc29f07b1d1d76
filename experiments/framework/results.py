"""Result directories: where an experiment run writes its CSV, parameters and plots.

A run never overwrites an earlier one: the default place is `results/<experiment>/<timestamp>/`,
and an explicit `--out DIR` must be new or empty.

A run killed at any point never leaves a result that looks whole: params.json says
`"status": "incomplete"` from the start until the run records `complete` or `failed` at its end,
with the pid of the process writing it (`run_state` tells a run still going from one that was
killed), and every file is written under a temporary name and renamed into place when whole.

Results belong to whoever ran the command: under `sudo`, every directory and file made here is
handed to the invoking user (SUDO_UID/SUDO_GID), so `fabric-lab report` and replotting work
without root afterwards.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from experiments.framework.provenance import provenance
from topos.errors import FabricLabError
from topos.mininet.runstate import running, start_ticks

PARAMS_FILE = "params.json"
INCOMPLETE = "incomplete"  # the status until the run records `complete` or `failed`


class ResultDirError(FabricLabError):
    """The requested result directory cannot be used."""


def invoking_user() -> tuple[int, int] | None:
    """(uid, gid) of the user who ran `sudo`, when this process runs as root under sudo."""
    if os.geteuid() != 0 or "SUDO_UID" not in os.environ:
        return None
    try:
        uid = int(os.environ["SUDO_UID"])
        gid = int(os.environ.get("SUDO_GID", uid))
    except ValueError:
        return None
    return (uid, gid) if uid != 0 else None


def give_to_invoking_user(path: Path, *, tree: bool = False) -> None:
    """Hand `path` (with `tree`, everything under it too) to the user behind sudo; a no-op
    otherwise. Symbolic links are changed themselves, never what they point to."""
    owner = invoking_user()
    if owner is None:
        return
    paths = [path]
    if tree and path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            paths.extend(Path(root, name) for name in dirs + files)
    for item in paths:
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile (a socket, a temporary file)
            os.chown(item, *owner, follow_symlinks=False)


def make_dirs(path: Path) -> Path:
    """`path.mkdir(parents=True, exist_ok=True)`, handing every directory it creates to the user
    behind sudo."""
    missing = []
    for item in [path, *path.parents]:
        if item.exists():
            break
        missing.append(item)
    path.mkdir(parents=True, exist_ok=True)
    for item in reversed(missing):
        give_to_invoking_user(item)
    return path


def _hand_over_at_exit(run: Path) -> None:
    """Also hand over what is written into `run` after its last update (logs of a run that
    failed, files written by other processes) when this process exits."""
    if invoking_user() is not None:
        atexit.register(give_to_invoking_user, run, tree=True)


def allocate(experiment: str, out: Path | None = None, base: Path = Path("results")) -> Path:
    """Create and return a fresh directory for one run of `experiment`."""
    if out is not None:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise ResultDirError(f"{out} exists and is not an empty directory; results are never overwritten")
        make_dirs(out)
        give_to_invoking_user(out)
        _hand_over_at_exit(out)
        return out
    stamp = time.strftime("%Y%m%d-%H%M%S")
    parent = make_dirs(base / experiment)
    for suffix in [""] + [f"-{i}" for i in range(1, 1000)]:
        candidate = parent / f"{stamp}{suffix}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        give_to_invoking_user(candidate)
        _hand_over_at_exit(candidate)
        return candidate
    raise ResultDirError(f"no free result directory under {parent} for {stamp}")


class ResultDir:
    """One run's directory with writers for the files every experiment produces."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write_params(self, experiment: str, params: Mapping[str, Any], **extra: Any) -> Path:
        """params.json at the start of a run: status `incomplete` unless `extra` says otherwise,
        and the writing process (pid and start time) so that readers can tell it is alive."""
        pid = os.getpid()
        record = {"experiment": experiment, "params": dict(params), **provenance(),
                  "status": INCOMPLETE, "pid": pid, "pid_start": start_ticks(pid), **extra}
        return self.write_json(PARAMS_FILE, record)

    def update_params(self, **fields: Any) -> None:
        """Update params.json (a run's status); hands the whole directory to the user behind sudo."""
        record = self.read_params()
        record.update(fields)
        self.write_json(PARAMS_FILE, record)
        give_to_invoking_user(self.path, tree=True)

    def read_params(self) -> dict[str, Any]:
        return json.loads((self.path / PARAMS_FILE).read_text())

    def write_json(self, name: str, data: Any) -> Path:
        with self._writing(name) as handle:
            handle.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        return self.path / name

    def write_csv(self, name: str, rows: Iterable[Mapping[str, Any]],
                  fieldnames: Sequence[str]) -> Path:
        with self._writing(name) as handle:
            writer = csv.DictWriter(handle, fieldnames=list(fieldnames))
            writer.writeheader()
            for row in rows:
                writer.writerow({key: row.get(key, "") for key in fieldnames})
        return self.path / name

    @contextlib.contextmanager
    def _writing(self, name: str) -> Iterator[TextIO]:
        """A file written as `.NAME.partial` and renamed to NAME once whole (rows may come from
        a generator that runs the experiment: a run killed meanwhile leaves no NAME)."""
        target = self.path / name
        partial = target.with_name(f".{target.name}.partial")
        try:
            with partial.open("w", newline="") as handle:
                yield handle
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        give_to_invoking_user(target)

    def read_csv(self, name: str) -> list[dict[str, str]]:
        with (self.path / name).open(newline="") as handle:
            return list(csv.DictReader(handle))

    def plots(self) -> list[Path]:
        return sorted(self.path.glob("*.png"))


def run_state(record: Mapping[str, Any]) -> str:
    """What a run's params.json says of it: `complete`, `failed`, `running` (incomplete and its
    process still alive) or `incomplete` (it was killed, or its process died, before the end).
    A record without status comes from before runs recorded one and counts as complete."""
    status = record.get("status")
    if status is None or status in ("complete", "failed"):
        return str(status or "complete")
    pid, ticks = record.get("pid"), record.get("pid_start")
    if isinstance(pid, int) and isinstance(ticks, int) and running(pid, ticks):
        return "running"
    return INCOMPLETE
