"""Run-state files: what a running network created, so `fabric-lab clean` can remove it after a
hard kill. One JSON file per run in `run_dir()` (/run/fabric-lab, or $FABRIC_LAB_RUN_DIR).

Processes are recorded with their kernel start time, so a recycled pid is never mistaken for one
of ours; host network namespaces are recorded by their inode.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from topos.errors import FabricLabError
from topos.filenames import file_part

DEFAULT_RUN_DIR = Path("/run/fabric-lab")


def run_dir() -> Path:
    return Path(os.environ.get("FABRIC_LAB_RUN_DIR", str(DEFAULT_RUN_DIR)))


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state first), None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def start_ticks(pid: int) -> int | None:
    """Kernel start time of `pid` (clock ticks since boot), None if it does not exist."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def running(pid: int, ticks: int) -> bool:
    """Is `pid` the process that started at `ticks`, and not a zombie waiting to be reaped?"""
    fields = _stat(pid)
    if not fields:
        return False
    return fields[0] not in ("Z", "X") and int(fields[19]) == ticks


def netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


@dataclass
class ProcessRecord:
    """A process we started: `kind` is "switch" (target), "forkserver" (what forks p4switch
    targets, `topos.mininet.forked`), "node" (a switch node's shell) or "host" (a host shell,
    owner of namespace `netns`)."""

    pid: int
    ticks: int
    kind: str
    name: str
    netns: int | None = None

    @classmethod
    def of(cls, pid: int, kind: str, name: str) -> ProcessRecord:
        ticks = start_ticks(pid)
        if ticks is None:
            raise ProcessLookupError(f"process {pid} ({kind} {name}) is gone")
        return cls(pid, ticks, kind, name, netns_inode(pid) if kind == "host" else None)

    def alive(self) -> bool:
        """True while the very process we recorded runs (not a recycled pid)."""
        return running(self.pid, self.ticks)


@dataclass
class RunState:
    fabric: str
    owner: ProcessRecord
    interfaces: list[str] = field(default_factory=list)
    processes: list[ProcessRecord] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    path: Path | None = None

    @classmethod
    def create(cls, fabric: str, interfaces: list[str], directory: Path | None = None) -> RunState:
        directory = directory or run_dir()
        directory.mkdir(parents=True, exist_ok=True)
        owner = ProcessRecord.of(os.getpid(), "owner", fabric)
        state = cls(fabric, owner, sorted(interfaces))
        state.path = directory / f"{file_part(fabric)}-{owner.pid}-{owner.ticks}.json"
        state.save()
        return state

    def add(self, pid: int, kind: str, name: str) -> None:
        self.processes.append(ProcessRecord.of(pid, kind, name))

    def save(self) -> None:
        assert self.path is not None
        data = asdict(self)
        data.pop("path")
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.path)

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> RunState:
        return cls.from_dict(json.loads(path.read_text()), path)

    @classmethod
    def from_dict(cls, data: dict, path: Path | None = None) -> RunState:
        """The state from the JSON object of a run-state file."""
        return cls(fabric=data["fabric"], owner=ProcessRecord(**data["owner"]),
                   interfaces=list(data["interfaces"]),
                   processes=[ProcessRecord(**p) for p in data["processes"]],
                   created=data["created"], path=path)


class RunStateError(FabricLabError, ValueError):
    """A run-state file that cannot be read (the message names it and how to remove it)."""


def load_all(directory: Path | None = None) -> list[RunState]:
    directory = directory or run_dir()
    if not directory.is_dir():
        return []
    states = []
    for path in sorted(directory.glob("*.json")):
        try:
            states.append(RunState.load(path))
        except FileNotFoundError:
            continue  # its run ended meanwhile
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise RunStateError(f"{path}: not a readable run-state file ({err}); "
                                f"remove it: `sudo rm {path}`") from None
    return states
