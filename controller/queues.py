"""Queue settings through the switches' runtime CLI, the one thing P4Runtime cannot reach.

The same simple_switch_CLI commands work on both targets: `set_queue_depth <pkts> [<port>
[<prio>]]` and `set_queue_rate <pps> [<port> [<prio>]]` (without a port: every queue). They go
through the target's runtime-CLI client (`targets.Target.cli`).
"""

from __future__ import annotations

from collections.abc import Sequence

from targets import RuntimeCliError, Target, get_target
from topos.model import FabricSpec


def run_commands(target: Target | str, thrift_port: int, commands: Sequence[str],
                 timeout: float = 30.0) -> str:
    """Run runtime CLI commands on one switch over a client of their own (for a switch spoken
    to often, keep a `target.cli(port)` open instead); RuntimeCliError on the first failure."""
    with get_target(target).cli(thrift_port, timeout) as cli:
        return cli.batch(commands)


def queue_commands(depth: int | None = None, rate_pps: int | None = None,
                   ports: Sequence[int] = ()) -> list[str]:
    """set_queue_depth / set_queue_rate commands for `ports` (every queue when empty)."""
    for name, value in (("depth", depth), ("rate", rate_pps)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ValueError(f"queue {name} must be an integer >= 0, not {value!r}")
    commands = []
    for name, value in (("set_queue_depth", depth), ("set_queue_rate", rate_pps)):
        if value is None:
            continue
        commands += [f"{name} {value} {port}" for port in ports] or [f"{name} {value}"]
    return commands


def configure_queues(spec: FabricSpec, target: Target | str, *, depth: int | None = None,
                     rate_pps: int | None = None, switches: Sequence[str] | None = None) -> None:
    """Apply one queue depth and/or rate to every port of the named switches (default: all)."""
    commands = queue_commands(depth, rate_pps)
    if not commands:
        return
    failures = []
    for name in switches if switches is not None else [s.name for s in spec.switches]:
        try:
            run_commands(target, spec.switch(name).thrift_port, commands)
        except RuntimeCliError as err:
            failures.append(f"switch {name}: {err}")
    if failures:
        raise RuntimeCliError("\n".join(failures))
