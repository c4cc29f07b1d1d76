"""`p4switch`: run the embedded v1model switch (see `p4switch.switch.options` for the syntax)."""

from __future__ import annotations

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

    return run_switch(opts)


if __name__ == "__main__":
    sys.exit(main())
