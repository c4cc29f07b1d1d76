"""`fabric-lab lab list|start|check`: the course's labs (labs/README.md).

    fabric-lab lab list                       # the labs in order, time, what you edit
    fabric-lab lab start 1 ~/lab1             # copy lab 1's skeleton (and its handout) there
    cd ~/lab1 && fabric-lab lab check 1       # run lab 1's checks on ./ecmp_lab.p4
    fabric-lab lab check 1 --program FILE     # ... on another file
    fabric-lab lab check 1 --solution         # the instructor's view: the solution passes

Each check prints PASS or FAIL per step with what it saw, and a hint for a failed step. The
exit status is 0 only when every step passes. P4 labs need no root: the program runs in the
p4switch engine, packet by packet. Grading is closed book: the checker fails a program that
takes the lab's control from the reference instead of declaring it, and each run adds hidden
cases (flows, values, orders no handout lists) drawn from a fresh seed it prints;
FABRIC_LAB_SEED=N repeats a run's cases.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab", help="the course's labs: list, start one, check your work",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="lab_command", metavar="ACTION")
    sub.required = True
    p = sub.add_parser("list", help="the labs, in order")
    p.set_defaults(func=_list)
    p = sub.add_parser("start", help="copy a lab's skeleton and handout into a directory")
    p.add_argument("number", type=int, metavar="N")
    p.add_argument("dir", type=Path, metavar="DIR", help="your directory (new or without the "
                   "lab's file)")
    p.set_defaults(func=_start)
    p = sub.add_parser("check", help="run a lab's checks on your file")
    p.add_argument("number", type=int, metavar="N")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--program", type=Path, metavar="FILE",
                       help="the file to check (default: the lab's file in this directory)")
    which.add_argument("--solution", action="store_true", help="check the lab's solution")
    which.add_argument("--skeleton", action="store_true", help="check the untouched skeleton")
    p.set_defaults(func=_check)


# The lab machinery (p4switch's compiler, scapy) is imported when a lab command runs, not
# whenever `fabric-lab` starts.
def _list(_args: argparse.Namespace) -> int:
    from fabric_lab.labkit import LABS, labs

    found = labs()
    title = max(len(item.title) for item in found)
    edit = max(len(f"{item.file} ({item.kind})") for item in found)
    print(f"{'N':>2}  {'lab':<{title}}  {'time':>7}  {'you edit':<{edit}}  prerequisites")
    for item in found:
        print(f"{item.number:>2}  {item.title:<{title}}  {item.minutes:>3} min  "
              f"{item.file + ' (' + item.kind + ')':<{edit}}  {item.prereqs}")
    print(f"\nStart one with `fabric-lab lab start N DIR`; the handouts are "
          f"{LABS}/NN-*/README.md.")
    return 0


def _start(args: argparse.Namespace) -> int:
    from fabric_lab.closedbook import pipeline_copy
    from fabric_lab.labkit import LabError, lab

    try:
        item = lab(args.number)
    except LabError as err:
        print(f"fabric-lab lab: {err}", file=sys.stderr)
        return 2
    target = args.dir / item.file
    if target.exists():
        print(f"fabric-lab lab: {target} exists; your work is never overwritten (pick another "
              f"directory or move it away)", file=sys.stderr)
        return 2
    args.dir.mkdir(parents=True, exist_ok=True)
    made = []
    if item.kind == "P4":
        # the program includes the lab's pipeline as include/...: a read-only copy in which
        # the controls under study are left out (the student's file declares them)
        include = args.dir / "include"
        if include.exists() or include.is_symlink():
            print(f"fabric-lab lab: {include} exists; keeping it (move it away for the lab's "
                  f"copy, in which {', '.join(item.own_controls)} are yours to write)",
                  file=sys.stderr)
        else:
            stubbed = pipeline_copy(include, item.withheld, item.file, item.own_controls)
            made.append(f"include/ (the pipeline without {', '.join(stubbed)})")
    handout = args.dir / f"lab{item.number}-README.md"
    if not handout.exists():
        handout.write_text(_absolute_links(item.path / "README.md"))
        made.append(handout.name)
    shutil.copyfile(item.skeleton, target)
    made.insert(0, target.name)
    print(f"lab {item.number} ({item.title}) in {args.dir}: {', '.join(made)}")
    print(f"edit {item.file} (the TODOs), then: cd {args.dir} && fabric-lab lab check "
          f"{item.number}")
    return 0


def _absolute_links(page: Path) -> str:
    """The handout with its relative links pointing into the repository, so that they still
    work from the student's copy."""
    def absolute(match: re.Match[str]) -> str:
        target = match[2]
        if re.match(r"[a-z]+:|#|/", target):
            return match[0]
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve()
        return f"{match[1]}({resolved}{'#' + anchor if anchor else ''})"

    return re.sub(r"(\]\s?)\(([^)\s]+)\)", absolute, page.read_text())


def _check(args: argparse.Namespace) -> int:
    from fabric_lab.closedbook import SEED_VARIABLE, run_seed
    from fabric_lab.labkit import LabError, lab, run_checks

    try:
        item = lab(args.number)
    except LabError as err:
        print(f"fabric-lab lab: {err}", file=sys.stderr)
        return 2
    program = (item.solution if args.solution else item.skeleton if args.skeleton
               else args.program or Path(item.file))
    if not program.is_file():
        print(f"fabric-lab lab: no {program} here: run `fabric-lab lab start {item.number} DIR` "
              f"and check from DIR, or give --program FILE", file=sys.stderr)
        return 2
    seed = run_seed()
    print(f"lab {item.number}: {item.title} — checking {program} (hidden cases: seed {seed}; "
          f"{SEED_VARIABLE}={seed} repeats them)", flush=True)
    try:
        results = run_checks(item, program, seed=seed)
    except LabError as err:
        print(f"fabric-lab lab: {err}", file=sys.stderr)
        return 2
    for number, result in enumerate(results, 1):
        verdict = "SKIP" if result.skipped else "PASS" if result.passed else "FAIL"
        print(f"  [{verdict}] {number}. {result.step.name} ({result.seconds:.1f} s)", flush=True)
        for line in result.detail.splitlines():
            print(f"         {line}")
        if not result.passed and not result.skipped:
            print(f"         hint: {result.step.hint}")
    passed = sum(r.passed for r in results)
    print(f"{passed}/{len(results)} steps passed" + (" — lab complete" if passed == len(results)
                                                     else ""))
    return 0 if passed == len(results) else 1
