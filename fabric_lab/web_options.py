"""`--web`, `--web-port` and `--web-host`, the same on `up`, `demo` and `train`: checked by
argparse (status 2, before anything starts). Apart from `fabric_lab.web`, which imports the
controller and aiohttp."""

from __future__ import annotations

import argparse
import ipaddress
import socket

from fabric_lab.arguments import number
from topos.errors import MachineError
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


def check_web_port(args: argparse.Namespace) -> None:
    """With --web, that the view can listen where it is asked to, before the fabric comes up
    (MachineError, status 3: a port another process holds); the view binds it later."""
    if not args.web or args.web_port == 0:
        return
    family = socket.AF_INET6 if ":" in args.web_host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the view's server does
        try:
            probe.bind((args.web_host, args.web_port))
        except OSError as err:
            raise MachineError(f"--web-port {args.web_port}: the web view cannot listen on "
                               f"{args.web_host}: {err.strerror or err}") from None

