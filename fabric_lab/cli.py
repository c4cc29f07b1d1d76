"""Entry point of `fabric-lab`: a thin dispatcher over the subcommand modules."""

from __future__ import annotations

import argparse
import importlib
import sys

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
# reported as one `fabric-lab COMMAND: message` line and exit status 1, never a traceback.
# Named by module, looked up only when something was raised: a class whose module was never
# imported cannot have been raised (and a module that has moved costs nothing but its entry).
EXPECTED_ERRORS: list[tuple[str, str]] = [
    ("builtins", "PermissionError"),
    ("builtins", "FileNotFoundError"),
    ("topos.validation", "FabricError"),
    ("topos.placement", "PlacementError"),
    ("topos.mininet.nodes", "SwitchStartError"),  # and LeftoverError
    ("topos.mininet.patch", "PatchError"),
    ("topos.mininet.runstate", "RunStateError"),
    ("topos.mininet.cluster_servers", "ClusterError"),
    ("controller.pipeline", "PipelineError"),
    ("controller.fabric", "ProgrammingError"),
    ("controller.p4rt", "P4RuntimeError"),
    ("targets.base", "TargetError"),
    ("targets.base", "TargetUnavailable"),
    ("targets.base", "CompileError"),
    ("targets.runtime_cli", "RuntimeCliError"),
    ("controller.lb", "LbError"),
    ("controller.congestion", "CongestionConfigError"),
    ("controller.sync", "ControllerError"),
    ("traffic.hosts", "HostSpecError"),
    ("traffic.agent", "AgentError"),
    ("experiments.framework.results", "ResultDirError"),
    ("experiments.framework.experiment", "ExperimentError"),
    ("p4switch.frontend.diagnostics", "P4CompileError"),
]


def expected_error(err: BaseException) -> bool:
    """Is `err` one of EXPECTED_ERRORS (or Mininet's failure to create an interface pair)?"""
    for module, name in EXPECTED_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(err, cls):
            return True
    return type(err) is Exception and str(err).startswith("Error creating interface pair")


def main(argv: list[str] | None = None) -> int:
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
        return 1


if __name__ == "__main__":
    sys.exit(main())
