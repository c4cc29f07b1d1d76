"""`p4switch`: run the embedded v1model switch, or several in one process (see
`p4switch.switch.options` for the syntax)."""

from __future__ import annotations

import logging
import os
import sys

from p4switch.switch.access import exposure_warnings
from p4switch.switch.options import OptionsError, parse_group


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        group = parse_group(argv)
    except OptionsError as exc:
        for line in str(exc).splitlines():
            print(f"p4switch: error: {line}", file=sys.stderr)
        print("Run p4switch --help for the syntax.", file=sys.stderr)
        return 2
    for opts in group:
        for warning in exposure_warnings(opts.grpc_addr, opts.grpc_tls):
            print(f"p4switch: warning: {warning}", file=sys.stderr)
    from p4switch.switch.process import run_switches

    status = run_switches(group)
    # Everything is closed by now; skip the interpreter's teardown (joining gRPC's internal
    # threads) so that SIGTERM ends the process promptly.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
