"""`p4switch-stf PROGRAM.p4 TEST.stf [-I DIR] [-D NAME[=VALUE]] [-v]`: run a p4c STF test.

Prints the outcome (PASS, WRONG, UNSUPPORTED, INVALID) on stdout, the reasons on stderr:
errors in the test or the program as `file:line:col: error: message`, a file that cannot be
read or is not text (missing, a directory, binary) as `file: error: message`. Exit status:
  0  PASS
  1  WRONG (the differences on stderr)
  2  INVALID (the test or the program is wrong, or cannot be read), UNSUPPORTED (p4switch
     does not run something the test needs), or bad usage (as argparse)
  4  a defect in p4switch (the traceback on stderr), as p4switch-compile
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from p4switch.cli.compile import parse_defines
from p4switch.stf.runner import Outcome, run_stf_files

EXIT_CODES = {Outcome.PASS: 0, Outcome.WRONG: 1, Outcome.UNSUPPORTED: 2, Outcome.INVALID: 2}
EXIT_DEFECT = 4
MAX_MESSAGES = 6  # without -v


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
    log = (lambda line: print(line, file=sys.stderr)) if args.verbose else None
    try:
        result = run_stf_files(args.program, args.test, args.include_dirs, defines, log=log)
    except Exception:
        traceback.print_exc()
        print(f"p4switch-stf: {args.test}: a defect in p4switch (the traceback above)",
              file=sys.stderr)
        return EXIT_DEFECT
    print(result.outcome.value)
    messages = result.warnings + result.messages
    shown = messages if args.verbose else messages[:MAX_MESSAGES]
    for message in shown:
        print(message, file=sys.stderr)
    if len(shown) < len(messages):
        print(f"p4switch-stf: {len(messages) - len(shown)} more (-v shows them all)",
              file=sys.stderr)
    return EXIT_CODES[result.outcome]


if __name__ == "__main__":
    sys.exit(main())
