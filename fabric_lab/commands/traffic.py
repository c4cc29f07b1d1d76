"""`fabric-lab traffic send|recv|collective|paced|worker`: the `traffic` package's own tool
(`traffic.command`, also `python -m traffic`) under the lab's command line."""

from __future__ import annotations

import argparse

from traffic.command import DESCRIPTION, HELP, add_actions


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("traffic", help=HELP, description=DESCRIPTION)
    sub = p.add_subparsers(dest="traffic_command", metavar="ACTION")
    sub.required = True
    add_actions(sub)
