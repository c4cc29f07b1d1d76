"""Where a machine's CPU goes, from /proc: a process's CPU ticks and context switches (all its
threads), its descendants, the kernel's softirq threads, every CPU's busy and softirq time, NET
softirqs, and the busiest processes over a window. Linux only; a process that ends between
listing and reading counts as `alive`'s default."""

from __future__ import annotations

import os
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_ticks(pid: int) -> int:
    """utime + stime of a process, all its threads."""
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12])


def ctx_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches summed over the process's threads."""
    vol = invol = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:
            continue  # a thread that just ended
        for line in text.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                vol += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                invol += int(line.split()[1])
    return vol, invol


def with_children(pids: list[int]) -> list[int]:
    """`pids` and their descendants (a traffic process started through a wrapper)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int(_stat_fields(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = set(pids), list(pids)
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parent.items() if pp == pid and p not in out]
        out.update(kids)
        todo += kids
    return sorted(out)


def ksoftirqd_pids() -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().startswith("ksoftirqd"):
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def busiest(seconds: float = 1.0, top: int = 5) -> str:
    """The processes that used the most CPU over `seconds` (what else the machine is doing)."""
    def ticks() -> dict[int, int]:
        out = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                out[int(entry.name)] = alive(cpu_ticks, int(entry.name), 0)
        return out
    before = ticks()
    time.sleep(seconds)  # the measurement window
    used = sorted(((n - before.get(pid, n), pid) for pid, n in ticks().items()), reverse=True)
    names = []
    for n, pid in used[:top]:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").split()
        except OSError:
            continue
        name = " ".join(a.rsplit("/", 1)[-1] for a in argv[:4])[:40]
        names.append(f"{100 * n / TICKS / seconds:.0f}% {name}")
    return "; ".join(names)


def system_ticks() -> tuple[int, int]:
    """(busy, softirq) ticks of all CPUs, /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
    return user + nice + system + irq + softirq + steal, softirq


def net_softirqs() -> int:
    total = 0
    for line in Path("/proc/softirqs").read_text().splitlines():
        name, *counts = line.split()
        if name in ("NET_RX:", "NET_TX:"):
            total += sum(int(c) for c in counts)
    return total


def alive(fn, pid: int, default):
    try:
        return fn(pid)
    except (OSError, ValueError):
        return default  # ended between listing and reading
