"""Entry point of `fabric-lab`: a thin dispatcher over the subcommand modules."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import importlib
import signal
import sys

from p4switch.frontend.diagnostics import P4CompileError
from topos.errors import FabricLabError

# One module per subcommand in fabric_lab/commands/; each defines register(subparsers).
SUBCOMMANDS: list[str] = [
    "show",
    "clean",
    "run",
    "report",
    "controller",
    "up",
    "traffic",
    "demo",
    "lb",
    "replot",
    "lab",
    "train",
    "perf",
    "diagnose",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabric-lab",
        description="Build emulated AI-training fabrics of P4 switches and run experiments on them.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"fabric_lab.commands.{name}").register(subparsers)
    return parser


# Errors that answer the user's input (a bad argument, something in the way, no permission):
# reported as one `fabric-lab COMMAND: message` line and the exit status of the error's class
# (topos/errors.py: 1 failed, 2 wrong input, 3 the machine cannot; other OSErrors 1), never a
# traceback.
# The lab's own derive from FabricLabError (topos/errors.py); p4switch, which stands alone,
# has its own compile error.
EXPECTED_ERRORS: tuple[type[Exception], ...] = (
    FabricLabError, P4CompileError, PermissionError, FileNotFoundError)


def expected_error(err: BaseException) -> bool:
    """Is `err` one of EXPECTED_ERRORS (or Mininet's failure to create an interface pair)?"""
    if isinstance(err, EXPECTED_ERRORS):
        return True
    return type(err) is Exception and str(err).startswith("Error creating interface pair")


def main(argv: list[str] | None = None) -> int:
    with contextlib.suppress(ValueError, OSError):  # not the main thread / no stderr
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1`: where it hangs
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"fabric-lab {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if not expected_error(err):
            raise
        message = str(err).strip() or type(err).__name__
        if isinstance(err, OSError) and err.filename and err.strerror:
            message = f"{err.filename}: {err.strerror}"
        print(f"fabric-lab {args.command}: {message}", file=sys.stderr)
        return int(getattr(err, "exit_status", 1))


if __name__ == "__main__":
    sys.exit(main())
