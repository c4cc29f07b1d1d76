"""What a new run does with what an earlier one left behind, before it creates anything.

- A recorded run whose owner is dead (killed hard): cleaned as `fabric-lab clean` would, with one
  line saying so.
- A recorded run whose owner still runs and that uses one of our interface names: refused, with
  one line naming the run and the command that stops it.
- Anything else in the way (an interface of ours that exists, a patch interface, a management
  port something listens on) that no run-state file explains: refused, with one line naming it
  and the command that removes it.

Nothing is ever removed that no run-state file names, so a network someone else runs with the
same names is never touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from topos.mininet.cleanup import (
    CleanReport,
    clean_run,
    plan_interfaces,
    remove_interfaces,
)
from topos.mininet.nodes import SwitchStartError, grpc_listening
from topos.mininet.runstate import DEFAULT_RUN_DIR, RunState, load_all, run_dir

SYS_NET = Path("/sys/class/net")


class LeftoverError(SwitchStartError):
    """The network cannot start: something of another run is in its way (one line, naming the
    command that clears it)."""


def _existing(names: Iterable[str]) -> list[str]:
    return [n for n in names if (SYS_NET / n).exists()]


def _describe(state: RunState) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.created))
    return f"{state.fabric} run (pid {state.owner.pid}, started {when})"


def clear_dead_runs(interfaces: Iterable[str], directory: Path | None = None, *,
                    timeout: float = 5.0,
                    say: Callable[[str], None] = print) -> list[RunState]:
    """Clean every recorded run in `directory` whose owner is dead, saying so in one line each;
    refuse when a live run (recorded there or in the default run directories) holds one of
    `interfaces`. Returns the runs cleaned."""
    ours = set(interfaces)
    states = load_all(directory)
    alive = {id(s): s.owner.alive() for s in states}
    live = [s for s in states if alive[id(s)]]
    elsewhere = {d.resolve() for d in (run_dir(), DEFAULT_RUN_DIR)} - {
        (directory or run_dir()).resolve()}
    live += [s for d in sorted(elsewhere) for s in load_all(d) if s.owner.alive()]
    for state in live:
        clash = sorted(ours & set(state.interfaces))
        if clash:
            raise LeftoverError(
                f"a {_describe(state)} is still running and uses {clash[0]}"
                f"{f' and {len(clash) - 1} more interface(s)' if len(clash) > 1 else ''}: "
                f"stop it first (Ctrl-C or `kill {state.owner.pid}` ends it cleanly), or "
                f"`sudo fabric-lab clean --force` if it hangs")
    in_use = {name for s in live for name in s.interfaces}
    cleaned = []
    for state in states:
        if alive[id(state)]:
            continue
        report = CleanReport()
        names = clean_run(state, timeout, report)
        removed = remove_interfaces(names - in_use)
        state.remove()
        cleaned.append(state)
        say(f"fabric-lab: cleaned up after a killed {_describe(state)}: stopped "
            f"{len(report.stopped)} process(es), removed {len(removed)} interface(s)")
    return cleaned


def refuse_unrecorded(interfaces: Iterable[str], patches: Iterable[str],
                      ports: Iterable[tuple[str, str, int]]) -> None:
    """Raise LeftoverError for the first thing in the way that no run records: an interface
    name of ours that exists, or a (switch, "gRPC" | "thrift", port) something listens on."""
    names = list(interfaces)
    found = _existing(names) or _existing(patches)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        if set(found) <= set(names) and set(found) <= plan_interfaces():
            fix = "`sudo fabric-lab clean` removes the lab's interfaces"
        else:
            fix = f"remove it with `sudo ip link del dev {found[0]}`"
        raise LeftoverError(f"interface {found[0]}{more} already exists and no recorded run "
                            f"owns it (a network with the same names?); {fix}")
    for switch, what, port in ports:
        if grpc_listening(port):
            raise LeftoverError(f"{switch}: something already listens on {what} port {port} "
                                f"(a switch left running?): `sudo fabric-lab clean` "
                                f"stops the lab's recorded switches; otherwise stop what "
                                f"`sudo ss -ltnp 'sport = :{port}'` shows")
