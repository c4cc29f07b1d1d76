"""`p4switch-stf PROGRAM.p4 TEST.stf [-I DIR] [-D NAME[=VALUE]] [-v]`: run a p4c STF test.

Prints the outcome (PASS, WRONG, UNSUPPORTED, INVALID). Exit status: 0 PASS, 1 WRONG (the
differences on stderr), 2 UNSUPPORTED or INVALID (the reason on stderr) and bad usage, 3 an
internal error of p4switch (a defect: the traceback on stderr).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from p4switch.cli.compile import parse_defines
from p4switch.stf.runner import Outcome, run_stf_files

EXIT_CODES = {Outcome.PASS: 0, Outcome.WRONG: 1, Outcome.UNSUPPORTED: 2, Outcome.INVALID: 2}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="p4switch-stf", description="Run a p4c STF test against the embedded p4switch."
    )
    parser.add_argument("program", type=Path, help="the .p4 file")
    parser.add_argument("test", type=Path, help="the .stf file")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="add DIR to the #include search path (repeatable)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                        help="define a preprocessor macro (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the per-packet trace and CLI command output")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        defines = parse_defines(args.defines)
    except ValueError as exc:
        parser.error(str(exc))
    for path in (args.program, args.test):
        if not path.is_file():
            print(f"p4switch-stf: {path}: no such file", file=sys.stderr)
            return 2
    log = (lambda line: print(line, file=sys.stderr)) if args.verbose else None
    try:
        result = run_stf_files(args.program, args.test, args.include_dirs, defines, log=log)
    except Exception:
        traceback.print_exc()
        print("p4switch-stf: internal error (a defect in p4switch)", file=sys.stderr)
        return 3
    print(result.outcome.value)
    for message in result.warnings + result.messages:
        print(message, file=sys.stderr)
    return EXIT_CODES[result.outcome]


if __name__ == "__main__":
    sys.exit(main())
