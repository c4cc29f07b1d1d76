"""Remove what a hard-killed run left behind: its processes, namespaces and interfaces.

Only things recorded in run-state files (processes checked by pid *and* start time) are stopped;
interfaces are removed by name: those the run-state lists and those of every fabric's default
plan. A run whose owning process is still alive is left alone unless `force` is given.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from topos.builders import FABRICS, build_fabric
from topos.mininet.procs import stop_pid
from topos.mininet.runstate import (
    DEFAULT_RUN_DIR,
    ProcessRecord,
    RunState,
    load_all,
    netns_inode,
    run_dir,
)


@dataclass
class CleanReport:
    stopped: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"skipped {s}" for s in self.skipped]
        out += [f"stopped {s}" for s in self.stopped]
        if self.interfaces:
            out.append(f"removed {len(self.interfaces)} interface(s): "
                       + " ".join(self.interfaces))
        out += [f"removed run state {r}" for r in self.runs]
        return out or ["nothing to clean"]


def plan_interfaces() -> set[str]:
    """Interface names of every registered fabric at its default scale."""
    return {end.intf for name in FABRICS for ln in build_fabric(name).links
            for end in (ln.a, ln.b)}


def _pids_in_netns(inode: int) -> list[int]:
    own = os.getpid()
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    return [pid for pid in pids if pid != own and netns_inode(pid) == inode]


def _has_host_interface(pid: int, host: str) -> bool:
    """Does the namespace of `pid` hold one of `host`'s interfaces (`<host>-eth<n>`)?"""
    try:
        lines = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return any(line.split(":", 1)[0].strip().startswith(f"{host}-eth") for line in lines)


def _stop_host(rec: ProcessRecord, timeout: float, report: CleanReport) -> None:
    """Stop every process left in a host's namespace, then its shell.

    The namespace is ours while the recorded shell lives; once the shell has gone (it exits when
    the run's owner dies), a process is taken as inside it only if its namespace has the same
    inode *and* still holds the host's interfaces, so a recycled inode is never mistaken for it.
    """
    if rec.netns is not None:
        for pid in _pids_in_netns(rec.netns):
            if pid != rec.pid and (rec.alive() or _has_host_interface(pid, rec.name)):
                report.stopped.append(f"pid {pid} in host {rec.name} "
                                      f"({stop_pid(pid, timeout)})")
    if rec.alive():
        report.stopped.append(f"host {rec.name} shell pid {rec.pid} "
                              f"({stop_pid(rec.pid, timeout, first=signal.SIGHUP)})")


def clean_run(state: RunState, timeout: float, report: CleanReport) -> set[str]:
    """Stop what `state` recorded (switches, then host and node shells); returns its interfaces."""
    for kind in ("switch", "forkserver"):  # the server would take its switches down unasked
        for rec in state.processes:
            if rec.kind == kind and rec.alive():
                report.stopped.append(f"{'switch ' if kind == 'switch' else ''}{rec.name} pid "
                                      f"{rec.pid} ({stop_pid(rec.pid, timeout, group=True)})")
    for rec in state.processes:
        if rec.kind == "host":
            _stop_host(rec, timeout, report)
        elif rec.kind == "node" and rec.alive():
            report.stopped.append(f"switch node {rec.name} shell pid {rec.pid} "
                                  f"({stop_pid(rec.pid, timeout, first=signal.SIGHUP)})")
    return set(state.interfaces)


def remove_interfaces(names: set[str]) -> list[str]:
    """Delete the root-namespace interfaces among `names` that exist; returns those removed."""
    removed = []
    for name in sorted(names):
        if Path("/sys/class/net", name).exists():
            subprocess.run(["ip", "link", "del", "dev", name], capture_output=True, check=False)
            if not Path("/sys/class/net", name).exists():
                removed.append(name)
    return removed


def live_interfaces(directory: Path | None) -> set[str]:
    """Interfaces of runs still alive, in `directory` and in the default run directories."""
    dirs = {d.resolve() for d in (directory or run_dir(), run_dir(), DEFAULT_RUN_DIR)}
    return {name for d in dirs for state in load_all(d) if state.owner.alive()
            for name in state.interfaces}


def clean(directory: Path | None = None, *, force: bool = False, plans: bool = True,
          timeout: float = 5.0) -> CleanReport:
    """Clean every recorded run in `directory` (default: the run directory)."""
    report = CleanReport()
    names: set[str] = plan_interfaces() if plans else set()
    in_use = live_interfaces(directory)
    for state in load_all(directory):
        if state.owner.alive() and not force:
            report.skipped.append(f"{state.fabric} run of pid {state.owner.pid}: still running "
                                  f"(use --force to clean it anyway)")
            continue
        in_use -= set(state.interfaces)
        names |= clean_run(state, timeout, report)
        state.remove()
        report.runs.append(str(state.path))
    report.interfaces = remove_interfaces(names - in_use)
    return report
