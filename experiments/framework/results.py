"""Result directories: where an experiment run writes its CSV, parameters and plots.

A run never overwrites an earlier one: the default place is `results/<experiment>/<timestamp>/`,
and an explicit `--out DIR` must be new or empty. The run holds an exclusive lock (`flock`) on
DIR/.lock from before that check to its end, so a second run given the same DIR fails at once.

A run keeps what it measured: rows measured one by one go through `append_csv`, each row
appended and flushed as it comes, so a run killed or interrupted keeps every row measured
before. A table written whole (`write_csv`, `write_json`) goes under a temporary name and is
renamed into place when whole: a table rewritten after every trial is never half there.
params.json says `"status": "incomplete"` from the start until the run records how it ended
(`complete`, `failed` or `interrupted`), with the pid of the process writing it (`run_state`
tells a run still going from one that was killed): CSV files of a run that did not complete
hold the rows it measured, not all the rows it meant to.

Results belong to whoever ran the command: under `sudo`, every directory and file made here is
handed to the invoking user (SUDO_UID/SUDO_GID), so `fabric-lab report` and replotting work
without root afterwards.
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import fcntl
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from experiments.framework.provenance import provenance
from topos.errors import InputError, MachineError
from topos.mininet.runstate import running, start_ticks

PARAMS_FILE = "params.json"
LOCK_FILE = ".lock"  # flock-ed by the run writing the directory; holds its pid
INCOMPLETE = "incomplete"  # the status until the run records how it ended
INTERRUPTED = "interrupted"  # stopped by Ctrl-C (SIGINT): its files hold what was measured
ENDED = ("complete", "failed", INTERRUPTED)


class ResultDirError(InputError):
    """The requested result directory cannot be used (a file, not empty, not writable)."""


class ResultDirInUse(MachineError):
    """Another run on this machine holds the result directory: nothing wrong with the argument,
    but it cannot be used now (as a port another process listens on)."""


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


def allocate(experiment: str, out: Path | None = None,
             base: Path = Path("results")) -> ResultDir:
    """A fresh directory for one run of `experiment`, locked for this process until
    `ResultDir.close()` (or its exit): `out` when given (new or empty), else a new
    `base/experiment/<timestamp>`."""
    if out is not None:
        return claim(out)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    parent = _make_dirs_or_say(base / experiment)
    for suffix in [""] + [f"-{i}" for i in range(1, 1000)]:
        candidate = parent / f"{stamp}{suffix}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as err:
            raise ResultDirError(f"{candidate}: {err.strerror}") from None
        give_to_invoking_user(candidate)
        return claim(candidate)
    raise ResultDirError(f"no free result directory under {parent} for {stamp}")


def claim(path: Path) -> ResultDir:
    """Make `path` (new or empty) this process's result directory: created, locked (DIR/.lock,
    `flock`, held until `close()` or exit), then checked empty, so of two runs given the same
    directory at once the second fails at once (`ResultDirInUse`) and the first's files stay."""
    lock_path = path / LOCK_FILE
    created = not lock_path.exists()
    if created:  # nothing of a run's there: never leave a lock file in a directory refused
        _refuse_used(path)
    _make_dirs_or_say(path)
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise ResultDirError(f"{lock_path}: {err.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        raise ResultDirInUse(f"{path}: another run is writing to it"
                             f"{f' (pid {holder})' if holder.isdigit() else ''}; "
                             "results are never overwritten") from None
    try:
        _refuse_used(path)  # the check that counts: under the lock
    except ResultDirError:
        if created:
            lock_path.unlink(missing_ok=True)
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    give_to_invoking_user(lock_path)
    give_to_invoking_user(path)
    _hand_over_at_exit(path)
    return ResultDir(path, lock_fd=fd)


def result_dir_problem(path: Path) -> str | None:
    """Why `path` cannot take a new run (a file, or a directory holding anything but the lock
    file), or None. A directory another run holds is left to `claim`, which says so."""
    return None if _held(path / LOCK_FILE) else _used_problem(path)


def _used_problem(path: Path) -> str | None:
    try:
        if not path.exists():
            return None
        if not path.is_dir():
            return f"{path} is a file, not a directory: results go into a new or empty directory"
        if any(item.name != LOCK_FILE for item in path.iterdir()):
            return f"{path} exists and is not an empty directory; results are never overwritten"
    except OSError as err:
        return f"{path}: {err.strerror}"
    return None


def _held(lock_path: Path) -> bool:
    """Does a running run hold `lock_path`?"""
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _refuse_used(path: Path) -> None:
    problem = _used_problem(path)
    if problem:
        raise ResultDirError(problem)


def _make_dirs_or_say(path: Path) -> Path:
    """`make_dirs(path)`, an OS error as one line naming the path."""
    try:
        return make_dirs(path)
    except (FileExistsError, NotADirectoryError):
        in_way = next((item for item in [path, *path.parents]
                       if item.exists() and not item.is_dir()), path)
        raise ResultDirError(f"{in_way} is a file, not a directory"
                             f"{f' (on the way to {path})' if in_way != path else ''}") from None
    except OSError as err:
        raise ResultDirError(f"{err.filename or path}: {err.strerror}") from None


class ResultDir:
    """One run's directory with writers for the files every experiment produces; `lock_fd`
    is the lock `claim` took (None for a directory only read or redrawn)."""

    def __init__(self, path: Path, lock_fd: int | None = None) -> None:
        self.path = path
        self._lock_fd = lock_fd

    def close(self) -> None:
        """Release the directory's lock (the run has ended)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

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

    def append_csv(self, name: str, fieldnames: Sequence[str]) -> CsvAppender:
        """A new CSV file written a row at a time as rows are measured (see `CsvAppender`)."""
        return CsvAppender(self.path / name, fieldnames)

    def write_csv(self, name: str, rows: Iterable[Mapping[str, Any]],
                  fieldnames: Sequence[str]) -> Path:
        """A whole table, replacing the file of that name in one step when written."""
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


class CsvAppender:
    """A CSV file whose rows are appended and flushed one at a time, as they are measured: a
    run that stops keeps every row it measured. The header is written (and flushed) at once;
    the file must be new. Use as a context manager, or `close()`."""

    def __init__(self, path: Path, fieldnames: Sequence[str]) -> None:
        self.path = path
        self.fieldnames = list(fieldnames)
        self.rows = 0
        self._handle = path.open("x", newline="")
        give_to_invoking_user(path)
        self._writer = csv.DictWriter(self._handle, fieldnames=self.fieldnames)
        self._writer.writeheader()
        self._handle.flush()

    def append(self, row: Mapping[str, Any]) -> None:
        try:
            self._writer.writerow({key: row.get(key, "") for key in self.fieldnames})
            self._handle.flush()
        except OSError as err:  # a full disk: say which file
            raise OSError(err.errno, err.strerror, str(self.path)) from None
        self.rows += 1

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """`append` each of `rows` (one trial's, say)."""
        for row in rows:
            self.append(row)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> CsvAppender:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        with contextlib.suppress(OSError):  # a full disk: the error in flight says so
            self.close()


def run_state(record: Mapping[str, Any]) -> str:
    """What a run's params.json says of it: `complete`, `failed`, `interrupted` (Ctrl-C),
    `running` (incomplete and its process still alive) or `incomplete` (it was killed, or its
    process died, before the end). A record without status comes from before runs recorded
    one and counts as complete. A complete run whose plots failed says so in `plot_error`."""
    status = record.get("status")
    if status is None or status in ENDED:
        return str(status or "complete")
    pid, ticks = record.get("pid"), record.get("pid_start")
    if isinstance(pid, int) and isinstance(ticks, int) and running(pid, ticks):
        return "running"
    return INCOMPLETE
