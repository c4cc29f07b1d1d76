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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
