"""`p4switch-cli`: send simple_switch_CLI commands to a running p4switch.

    p4switch-cli --thrift-port 9090 < commands.txt
    echo "table_dump MyIngress.ipv4_lpm" | p4switch-cli --thrift-port 9090
    p4switch-cli --thrift-port 9090 set_queue_rate 100 2
    p4switch-cli --thrift-port 9090 --secret-file SECRET table_dump MyIngress.ipv4_lpm

Commands come from the arguments (one command) or from stdin (one per line; `#` comments;
a prompt when stdin is a terminal).
Each command's output is printed; errors go to stderr as "Error: ..." and make the exit status 1.
`--secret-file` names the file whose first line is the switch's runtime secret (the switch's
`--runtime-secret-file`). `--thrift-ip`, `--json` and `--pre` are accepted for compatibility
with simple_switch_CLI.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Iterable, Iterator

from p4switch.switch.access import OptionsError, read_secret
from p4switch.switch.options import DEFAULT_THRIFT_PORT


class RuntimeClient:
    """A connection to a switch's runtime command channel."""

    def __init__(self, port: int = DEFAULT_THRIFT_PORT, host: str = "127.0.0.1",
                 timeout: float = 30.0, secret: bytes | None = None):
        if not 0 < port < 65536:
            raise ValueError(f"port must be in 1..65535, got {port}")
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._file = self.sock.makefile("rwb")
        if secret is not None:
            ok, output = self.execute(f"auth {secret.decode()}")
            if not ok:
                self.close()
                raise PermissionError(output)

    def execute(self, line: str) -> tuple[bool, str]:
        """Run one command; (ok, output or error message)."""
        self._file.write(line.replace("\n", " ").encode() + b"\n")
        self._file.flush()
        reply = self._file.readline()
        if not reply:
            raise ConnectionError("the switch closed the runtime channel")
        data = json.loads(reply)
        return bool(data["ok"]), str(data["output"])

    def close(self) -> None:
        self._file.close()
        self.sock.close()

    def __enter__(self) -> RuntimeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _prompt() -> Iterator[str]:
    """Interactive use: a prompt per command, as simple_switch_CLI shows."""
    while True:
        try:
            yield input("RuntimeCmd: ")
        except EOFError:
            print()
            return


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"expected a TCP port in 1..65535, got {text!r}")
    return int(text)


def _read_secret(path: str) -> bytes:
    try:
        return read_secret(path)
    except OptionsError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="p4switch-cli", description=__doc__.splitlines()[0])
    p.add_argument("--thrift-port", type=_port, default=DEFAULT_THRIFT_PORT, metavar="N")
    p.add_argument("--thrift-ip", default="127.0.0.1")
    p.add_argument("--secret-file", type=_read_secret, metavar="FILE",
                   help="file whose first line is the switch's runtime secret")
    p.add_argument("--json", help="ignored (the switch knows its program)")
    p.add_argument("--pre", help="ignored (SimplePreLAG semantics always)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="one command (default: stdin)")
    args = p.parse_args(argv)
    try:
        client = RuntimeClient(args.thrift_port, args.thrift_ip, secret=args.secret_file)
    except PermissionError as exc:
        print(f"Error: the switch at {args.thrift_ip}:{args.thrift_port} refused: {exc}",
              file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"Error: cannot connect to the switch at {args.thrift_ip}:{args.thrift_port}: "
              f"{exc}", file=sys.stderr)
        return 1
    if args.command:
        lines: Iterable[str] = [" ".join(args.command)]
    elif sys.stdin.isatty():
        lines = _prompt()
    else:
        lines = sys.stdin
    failed = False
    with client:
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            ok, output = client.execute(line)
            if ok:
                if output:
                    print(output)
            else:
                failed = True
                print(f"Error: {output}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
