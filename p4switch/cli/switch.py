"""`p4switch`: run the embedded v1model switch (see `p4switch.switch.options` for the syntax)."""

from __future__ import annotations

import logging
import os
import sys

from p4switch.switch.options import OptionsError, parse_args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
    except OptionsError as exc:
        for line in str(exc).splitlines():
            print(f"p4switch: error: {line}", file=sys.stderr)
        print("Run p4switch --help for the syntax.", file=sys.stderr)
        return 2
    from p4switch.switch.process import run_switch

    status = run_switch(opts)
    # Everything is closed by now; skip the interpreter's teardown (joining gRPC's internal
    # threads) so that SIGTERM ends the process promptly.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
