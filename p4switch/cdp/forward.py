"""A port-to-port forwarder on the C data plane's loop: the floor of what a switch written
in C costs per packet-hop on this machine (bench/chain_hops.py --target c-forward).

    python -m p4switch.cdp.forward 1@veth0 2@veth1 [--map 1:2,2:1]

Prints `ready` once its ports are open; SIGTERM or SIGINT stop it, and it prints each port's
counters.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from p4switch.native import NativeUnavailable
from p4switch.switch.ports import PortError, RawPort


def parse_port(text: str) -> tuple[int, str]:
    number, sep, iface = text.partition("@")
    if not sep or not number.isdigit() or not iface:
        raise argparse.ArgumentTypeError(f"{text!r}: expected PORT@INTERFACE, e.g. 1@veth0")
    return int(number), iface


def parse_map(text: str) -> dict[int, int]:
    out = {}
    for pair in text.split(","):
        a, sep, b = pair.partition(":")
        if not sep or not a.isdigit() or not b.isdigit():
            raise argparse.ArgumentTypeError(f"{pair!r}: expected IN:OUT port numbers")
        out[int(a)] = int(b)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m p4switch.cdp.forward",
                                description=__doc__.splitlines()[0])
    p.add_argument("ports", nargs="+", type=parse_port, metavar="PORT@INTERFACE")
    p.add_argument("--map", type=parse_map, default=None,
                   help="IN:OUT,... (default: the first two ports to each other)")
    args = p.parse_args(argv)
    numbers = [n for n, _ in args.ports]
    if len(set(numbers)) != len(numbers):
        p.error("a port number is given twice")
    out_of = args.map
    if out_of is None:
        if len(numbers) < 2:
            p.error("give two ports, or --map")
        out_of = {numbers[0]: numbers[1], numbers[1]: numbers[0]}
    from p4switch.cdp.ports import forward

    stop_r, stop_w = os.pipe()
    os.set_blocking(stop_w, False)
    signal.set_wakeup_fd(stop_w)  # written by the C-level handler while the loop runs
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    ports: list[RawPort] = []
    try:
        ports = [RawPort(n, iface) for n, iface in args.ports]
        print("ready", flush=True)
        counters = forward(ports, out_of, stop_r)
    except (PortError, ValueError, NativeUnavailable, OSError) as e:
        print(f"forward: {e}", file=sys.stderr)
        return 1
    finally:
        for port in ports:
            port.close()
    for c in counters:
        print(f"port {c.number}: rx {c.rx_packets} packets, tx {c.tx_packets} packets, "
              f"{c.tx_errors} tx errors, {c.truncated} truncated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
