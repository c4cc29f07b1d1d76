"""How many hostile or careless inputs get a clean answer: a short error naming the fault, a
non-zero status, no traceback (the cases of tests/hostile/cases/, the regression suite's).

    bench/hostile_inputs.py [--only NAME-SUBSTRING] [--show]

Prints one row a case and the totals: clean answers, of them one-line answers, and the
slowest. The exit status is 1 when any case does not answer cleanly. Cases marked as needing
root are skipped (said so) without it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.hostile.inputs import all_cases, run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--show", action="store_true", help="print each case's error")
    args = parser.parse_args()
    cases = [case for case in all_cases() if args.only in case.name]
    answers = []
    for case in cases:
        if case.needs_root and os.geteuid() != 0:
            print(f"{case.name:44s} skipped: needs root")
            continue
        answer = run(case)
        answers.append(answer)
        verdict = "clean" if answer.clean else "; ".join(answer.problems)
        print(f"{case.name:44s} {answer.status!s:>5} {answer.seconds:6.2f} s  {verdict}")
        if args.show and answer.error_lines:
            print("    " + "\n    ".join(answer.error_lines[:8]))
    clean = sum(answer.clean for answer in answers)
    one_line = sum(answer.one_line for answer in answers)
    slowest = max(answers, key=lambda a: a.seconds, default=None)
    print(f"\n{clean}/{len(answers)} answered cleanly ({one_line} in one line)"
          + (f"; slowest {slowest.case.name} {slowest.seconds:.1f} s" if slowest else ""))
    return 0 if clean == len(answers) else 1


if __name__ == "__main__":
    sys.exit(main())
