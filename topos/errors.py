"""The base of the lab's expected errors.

An expected error answers what the user asked for: a bad argument or fabric, something in the
way, a switch or server that would not start. `fabric-lab` reports one as a single
`fabric-lab COMMAND: message` line and the exit status of its class, never a traceback: Every such class in the
lab (topos, targets, controller, traffic, experiments, fabric_lab) derives from `FabricLabError`,
next to the built-in class it always had (ValueError, RuntimeError, ...), so existing `except`
clauses keep working.

- 1 `FabricLabError`: the run started and failed (a switch died, a check found a fault).
- 2 `InputError`: the input is wrong (an argument, a file named, a value out of range); found
  before anything starts, every fault at once. argparse's own usage errors are 2 as well.
- 3 `MachineError`: this machine cannot run it (not root, a tool missing, a port in use).
- 130: interrupted (Ctrl-C); what was measured so far is kept.

p4switch stands alone and has its own errors (`P4CompileError`, ...).

This module imports nothing of the project, so any layer can import it.
"""

from __future__ import annotations


class FabricLabError(Exception):
    """An error the lab expects and explains in its message (see the module)."""
    exit_status = 1


class InputError(FabricLabError, ValueError):
    """The user's input is wrong; nothing has started."""
    exit_status = 2


class MachineError(FabricLabError, RuntimeError):
    """This machine lacks what the run needs (privileges, a tool, a free port)."""
    exit_status = 3
