"""`--web`, `--web-port` and `--web-host`, the same on `up`, `demo` and `train`: checked by
argparse (status 2, before anything starts). Apart from `fabric_lab.web`, which imports the
controller and aiohttp."""

from __future__ import annotations

import argparse
import ipaddress

from fabric_lab.arguments import number
from topos.values import LISTEN_PORT

DEFAULT_PORT = 8700
DEFAULT_HOST = "127.0.0.1"


def web_host(text: str) -> str:
    """An IP address of this machine to listen on (0.0.0.0: all of them)."""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IP address") from None


def add_web_args(parser: argparse.ArgumentParser, what: str) -> None:
    """The web view's options; `what`: the help of `--web`."""
    parser.add_argument("--web", action="store_true", help=what)
    parser.add_argument("--web-port", type=number(LISTEN_PORT), default=DEFAULT_PORT, metavar="PORT",
                        help=f"port of the web view (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--web-host", type=web_host, default=DEFAULT_HOST, metavar="ADDR",
                        help=f"address the web view listens on (default {DEFAULT_HOST}, this "
                             "machine only; any other is warned about: the token then "
                             "crosses the network in plain HTTP)")
