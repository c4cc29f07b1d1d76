"""The base of the lab's expected errors.

An expected error answers what the user asked for: a bad argument or fabric, something in the
way, a switch or server that would not start. `fabric-lab` reports one as a single
`fabric-lab COMMAND: message` line and exit status 1, never a traceback. Every such class in the
lab (topos, targets, controller, traffic, experiments, fabric_lab) derives from `FabricLabError`,
next to the built-in class it always had (ValueError, RuntimeError, ...), so existing `except`
clauses keep working. p4switch stands alone and has its own errors (`P4CompileError`, ...).

This module imports nothing of the project, so any layer can import it.
"""

from __future__ import annotations


class FabricLabError(Exception):
    """An error the lab expects and explains in its message (see the module)."""
