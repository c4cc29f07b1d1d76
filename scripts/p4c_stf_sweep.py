#!/usr/bin/env python3
"""Run p4c's v1model STF samples against p4switch and summarise the outcomes.

    scripts/p4c_stf_sweep.py P4C_CHECKOUT_DIR [--jobs N] [--timeout S] [--json OUT]
                             [--markdown FILE] [--filter SUBSTRING] [--p4info-all]
                             [--pipeline python|native|c]

Every `testdata/p4_16_samples/*-bmv2.p4` that has a `.stf` and includes v1model.p4 runs in its
own process (`p4switch-stf`'s runner) with a timeout. Prints the counts per outcome (PASS,
UNSUPPORTED, WRONG, INVALID, plus TIMEOUT and CRASH for a runner that hung or died), every
WRONG / INVALID / CRASH test with a one-line reason, the most common unsupported reasons, and
how the P4Info of each compiled program compares with p4c's golden `.p4info.txtpb`.
`--pipeline native` runs every test on the program's native pipeline (p4switch/native.py),
`--pipeline c` on the C data plane (p4switch/cdp: a program it does not run is UNSUPPORTED),
instead of the Python one; a build that fails is a CRASH.
`--markdown FILE` appends the same summary to FILE.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORDER = ("PASS", "UNSUPPORTED", "WRONG", "INVALID", "TIMEOUT", "CRASH")  # NO-STF: P4Info only


def golden_of(program: Path) -> Path:
    return program.parents[1] / "p4_16_samples_outputs" / f"{program.name}.p4info.txtpb"


def find_tests(p4c: Path, pattern: str | None, p4info_all: bool) -> list[tuple[Path, Path | None]]:
    """(program, stf) of the v1model STF samples; with `p4info_all` also (program, None) for
    every other v1model sample that has a golden P4Info."""
    samples = p4c / "testdata" / "p4_16_samples"
    if not samples.is_dir():
        raise SystemExit(f"{samples}: not a directory (expected a p4c checkout)")
    tests: list[tuple[Path, Path | None]] = []
    for program in sorted(samples.glob("*.p4")):
        if (pattern and pattern not in program.name) or not program.is_file():
            continue  # filtered out, or a dangling link
        if "v1model.p4" not in program.read_text(errors="replace"):
            continue
        stf = program.with_suffix(".stf")
        if program.name.endswith("-bmv2.p4") and stf.is_file():
            tests.append((program, stf))
        elif p4info_all and golden_of(program).is_file():
            tests.append((program, None))
    return tests


def run_one(program: Path, stf: Path | None, timeout: float, pipeline: str = "python") -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--one", str(program),
            str(stf) if stf else "-", str(golden_of(program)), pipeline]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                              cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"test": program.stem, "outcome": "TIMEOUT" if stf else "NO-STF",
                "reason": f"over {timeout:g} s", "messages": [], "seconds": timeout,
                "p4info": f"not built: over {timeout:g} s"}
    seconds = round(time.monotonic() - start, 2)
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return {"test": program.stem, "outcome": "CRASH" if stf else "NO-STF", "reason": tail[0],
                "messages": proc.stderr.strip().splitlines()[-30:], "seconds": seconds}
    result.update(test=program.stem, seconds=seconds)
    return result


def one(program: Path, stf: Path | None, golden: Path | None, pipeline: str) -> None:
    """Child process: run one test and print its result as one JSON line."""
    sys.path.insert(0, str(REPO))
    try:
        out = _one(program, stf, golden, pipeline)
    except Exception as exc:  # a runner or compiler crash is a result too
        import traceback

        frames = traceback.format_exception(exc)
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        out = {"outcome": "CRASH" if stf else "NO-STF", "reason": reason,
               "messages": "".join(frames).splitlines()[-30:], "p4info": f"not built: {reason}"}
    print(json.dumps(out))


def _one(program: Path, stf: Path | None, golden: Path | None, pipeline: str) -> dict:
    from p4switch.compiler import P4CompileError, compile_program
    from p4switch.stf.parser import StfSyntaxError, parse_stf_file
    from p4switch.stf.runner import Outcome, StfResult, compile_failure, run_statements

    p4info = None
    try:
        statements = parse_stf_file(stf) if stf else []
        program_ = compile_program(program, [program.parent])
    except StfSyntaxError as exc:
        result = StfResult(Outcome.INVALID, exc.errors)
    except P4CompileError as exc:
        result = compile_failure(exc)
    else:
        p4info = p4info_status(program_.model, golden)
        result = run_statements(program_, statements,
                                pipeline=pipeline if stf is not None else "python")
    return {"outcome": result.outcome.value if stf else "NO-STF", "reason": result.reason,
            "messages": result.messages, "warnings": result.warnings, "p4info": p4info}


def p4info_status(model, golden: Path | None) -> str:
    """How our P4Info compares with p4c's golden one: same / same-unordered / differs: ..."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from p4switch.p4info import build_p4info, p4info_text
    from p4switch.p4info.compare import diff_p4info, same_order

    if golden is None or not golden.is_file():
        return "no golden"
    try:
        ours = build_p4info(model)
    except Exception as exc:
        return f"differs: cannot build: {type(exc).__name__}: {exc}"
    text = golden.read_text()
    if p4info_text(ours) == text:
        return "same"
    expected = text_format.Parse(text, p4info_pb2.P4Info())
    problems = diff_p4info(expected, ours)
    if problems:
        return f"differs: {problems[0]}" + (f" (+{len(problems) - 1})" if len(problems) > 1 else "")
    return "same" if same_order(expected, ours) else "same-unordered"


def unsupported_reason(result: dict) -> str:
    """The unsupported construct, without file positions, for grouping."""
    for message in result["messages"] or [result["reason"]]:
        m = re.search(r"unsupported:\s*(.*)", message)
        if m:
            return re.sub(r"\s+", " ", m.group(1)).strip()[:100]
    return result["reason"][:100]


def summary(all_results: list[dict], elapsed: float) -> list[str]:
    results = [r for r in all_results if r["outcome"] != "NO-STF"]
    counts = collections.Counter(r["outcome"] for r in results)
    lines = [
        f"{len(results)} STF tests in {elapsed:.0f} s: "
        + ", ".join(f"{k} {counts.get(k, 0)}" for k in ORDER if counts.get(k) or k in ORDER[:4])
    ]
    for outcome in ("WRONG", "CRASH", "TIMEOUT", "INVALID"):
        listed = [r for r in results if r["outcome"] == outcome]
        if listed:
            lines.append(f"\n{outcome} ({len(listed)}):")
            lines += [f"- {r['test']}: {r['reason']}" for r in listed]
    warned = [r for r in results if r.get("warnings")]
    if warned:
        lines.append(f"\nCommands skipped as BMv2 rejects them ({len(warned)} tests):")
        lines += [f"- {r['test']} ({r['outcome']}): {r['warnings'][0]}" for r in warned]
    p4info = collections.Counter(
        (r.get("p4info") or "not built").split(":")[0] for r in all_results
    )
    lines.append(f"\nP4Info vs p4c's golden files ({len(all_results)} programs): "
                 + ", ".join(f"{k} {n}" for k, n in sorted(p4info.items())))
    lines += [f"- {r['test']}: {r['p4info']}" for r in all_results
              if (r.get("p4info") or "").startswith("differs")]
    reasons = collections.Counter(
        unsupported_reason(r) for r in results if r["outcome"] == "UNSUPPORTED"
    )
    if reasons:
        lines.append("\nUnsupported, most common reasons:")
        lines += [f"- {n} x {reason}" for reason, n in reasons.most_common(25)]
    return lines


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["--one"]:
        stf = None if args_list[2] == "-" else Path(args_list[2])
        one(Path(args_list[1]), stf, Path(args_list[3]), args_list[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("p4c", type=Path, help="a p4c checkout (with testdata/)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per test")
    parser.add_argument("--json", type=Path, help="write every result to this JSON file")
    parser.add_argument("--markdown", type=Path, help="append the summary to this file")
    parser.add_argument("--filter", help="only programs whose name contains this")
    parser.add_argument("--p4info-all", action="store_true",
                        help="also compare the P4Info of every v1model sample without an STF")
    parser.add_argument("--pipeline", choices=("python", "native", "c"), default="python",
                        help="run the tests on this pipeline: native (Cython and cc) or c "
                             "(p4switch/cdp, the C data plane)")
    args = parser.parse_args(args_list)
    tests = find_tests(args.p4c, args.filter, args.p4info_all)
    start = time.monotonic()
    results: list[dict] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, p, s, args.timeout, args.pipeline) for p, s in tests]
        for future in concurrent.futures.as_completed(futures):
            r = future.result()
            results.append(r)
            print(f"{r['outcome']:<11} {r['test']}  {r['reason'][:100]}", file=sys.stderr)
    results.sort(key=lambda r: r["test"])
    lines = summary(results, time.monotonic() - start)
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if args.markdown:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        with args.markdown.open("a") as f:
            f.write(f"\n## p4c STF sweep, {stamp}\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
