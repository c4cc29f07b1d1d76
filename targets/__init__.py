"""Switch targets (p4switch, BMv2): how to compile for them, start them and talk to their
runtime CLI, and what each can do. `get_target("auto")` is p4switch.

    target = get_target("bmv2").ensure_available()
    compiled = target.compile(Path("p4src/ecmp.p4"))
    if not target.caps.can_pause_queues: ...
    with target.cli(switch.thrift_port) as cli:
        cli.command("set_queue_rate 1000 1")
"""

from targets.base import (
    Capabilities,
    Compiled,
    CompileError,
    Target,
    TargetError,
    TargetUnavailable,
)
from targets.bmv2 import BMV2
from targets.p4switch import P4SWITCH
from targets.programs import find_program
from targets.registry import CHOICES, DEFAULT, NAMES, TARGETS, get_target
from targets.runtime_cli import RuntimeCli, RuntimeCliError, cli_errors

__all__ = ["BMV2", "CHOICES", "DEFAULT", "NAMES", "P4SWITCH", "TARGETS", "Capabilities", "CompileError",
           "Compiled", "RuntimeCli", "RuntimeCliError", "Target", "TargetError",
           "TargetUnavailable", "cli_errors", "find_program", "get_target"]
