"""The hosts of a running fabric, found from outside the process that runs it: its run-state file
(`topos.mininet.runstate`) records every NIC's namespace shell; `traffic.hosts.PidHost` starts
processes in those namespaces.

    state = running_fabric()                      # the one fabric running (or name it)
    hosts = fabric_hosts(spec, state)             # NIC name -> PidHost
"""

from __future__ import annotations

import os
from pathlib import Path

from controller.diagnose.probes import nic_ifaces
from topos.errors import FabricLabError
from topos.mininet.runstate import RunState, load_all
from topos.model import FabricSpec
from traffic.hosts import PidHost


class NoFabric(FabricLabError, RuntimeError):
    """No running fabric, several where one was wanted, or one that is not the model given."""


def running_fabric(name: str | None = None, directory: Path | None = None, *,
                   owner: int | None = None) -> RunState:
    """The run state of the fabric running now (named `name`, run by process `owner`, when
    given)."""
    states = [s for s in load_all(directory) if s.owner.alive()]
    if name is not None:
        states = [s for s in states if s.fabric == name]
    if owner is not None:
        states = [s for s in states if s.owner.pid == owner]
    if len(states) > 1:  # run from inside one of them (`up --run`, the `up` prompt's `sh`)
        mine = [s for s in states if s.owner.pid in ancestors()]
        states = mine or states
    if not states:
        raise NoFabric("no fabric is running" + (f" under the name {name!r}" if name else "")
                       + ": start one with `sudo fabric-lab up FABRIC`")
    if len(states) > 1:
        names = ", ".join(sorted(s.fabric for s in states))
        raise NoFabric(f"several fabrics are running ({names}): name one with --fabric")
    return states[0]


def ancestors(pid: int | None = None) -> set[int]:
    """This process's parent, its parent's parent, ... (from /proc)."""
    out: set[int] = set()
    pid = os.getpid() if pid is None else pid
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def fabric_hosts(spec: FabricSpec, state: RunState) -> dict[str, PidHost]:
    """NIC name -> its namespace, for every NIC of `spec` the run recorded (alive)."""
    shells = {p.name: p for p in state.processes if p.kind == "host" and p.alive()}
    missing = [nic.name for nic in spec.host_nics() if nic.name not in shells]
    if missing:
        raise NoFabric(f"the running fabric {state.fabric!r} has no host for "
                       f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}: is it "
                       f"the fabric given (same scale)?")
    return {nic.name: PidHost(nic.name, shells[nic.name].pid, nic.ip,
                             nic_ifaces(spec, nic.name)[0])
            for nic in spec.host_nics()}
